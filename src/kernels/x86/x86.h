#pragma once

// Optimised x86 variants. Each is compiled with its own ISA flags and may run only where
// isa_supported() says so; dispatch.cpp makes that choice.

#include <cstddef>
#include <span>

#include "kernels/variants.h"

namespace s1::kernels::x86 {

void layer_norm_avx512(std::span<const float> x, std::span<const float> residual,
                       std::span<const float> gamma, std::span<const float> beta, float eps,
                       std::span<float> y);
void gelu_avx512(std::span<const float> x, std::span<float> y);
void gelu_mul_avx512(std::span<const float> x, std::span<const float> gate, std::span<float> y);
void gelu_mul_bf16_avx512(std::span<const Bf16Bits> x, std::span<const Bf16Bits> gate, std::span<float> y);
void softmax_avx512(std::span<const float> x, std::size_t columns, std::span<float> y);
void convert_fp32_to_bf16_avx512_bf16(std::span<const float> x, std::span<Bf16Bits> y);
void attention_head_avx512(const AttentionHeadTask& task);
// bf16 products on AMX tiles; hands head_dim not a multiple of 32 to attention_head_avx512.
void attention_head_amx_bf16(const AttentionHeadTask& task);

}  // namespace s1::kernels::x86
