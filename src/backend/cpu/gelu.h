#pragma once

#include <cstddef>
#include <span>

#include "backend/cpu/convert.h"

namespace s1::backend::cpu {

// Exact GELU, 0.5·x·(1 + erf(x/√2)) (torch's default, approximate="none"), elementwise. y may be x.
void gelu(std::span<const float> x, std::span<float> y);

// GeGLU's gating, y = gelu(x) ⊙ gate, elementwise, in one pass. y may be x or gate.
void gelu_mul(std::span<const float> x, std::span<const float> gate, std::span<float> y);

// GeGLU over one fused projection: x is [rows, 2·width] with each row [input | gate] (ModernBERT's
// Wi as one matmul), y is [rows, width] = gelu(input) ⊙ gate. Row by row with gelu_mul's kernel.
void geglu(std::span<const float> x, std::size_t width, std::span<float> y);

// geglu with its output rounded to bf16, for a bf16 matmul's input: the same bits as geglu then
// convert_fp32_to_bf16, in one pass.
void geglu_to_bf16(std::span<const float> x, std::size_t width, std::span<Bf16Bits> y);
// The same over bf16 fused rows (Wi writing bf16): half the bytes read, each value widened exactly.
void geglu_to_bf16(std::span<const Bf16Bits> x, std::size_t width, std::span<Bf16Bits> y);

}  // namespace s1::backend::cpu
