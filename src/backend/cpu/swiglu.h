#pragma once

#include <cstddef>
#include <span>

#include "backend/cpu/convert.h"

namespace s1::backend::cpu {

// The gated MLP's activation: y = silu(gate) ⊙ up = gate · sigmoid(gate) · up, elementwise.
// y may be gate or up.
void silu_mul(std::span<const float> gate, std::span<const float> up, std::span<float> y);

// SwiGLU over one fused projection: x is [rows, 2·width] with each row [gate | up] (a gate_proj and
// up_proj as one matmul), y is [rows, width] = silu(gate) ⊙ up. Row by row with silu_mul's kernel.
void swiglu(std::span<const float> x, std::size_t width, std::span<float> y);

// swiglu with its output rounded to bf16, for a bf16 matmul's input: the same bits as swiglu then
// convert_fp32_to_bf16, in one pass.
void swiglu_to_bf16(std::span<const float> x, std::size_t width, std::span<Bf16Bits> y);
// The same from a bf16 projection (a bf16 matmul's bf16 destination): equal to widening x to fp32
// first.
void swiglu_to_bf16(std::span<const Bf16Bits> x, std::size_t width, std::span<Bf16Bits> y);

}  // namespace s1::backend::cpu
