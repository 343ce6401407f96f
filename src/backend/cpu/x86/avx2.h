#pragma once

// The AVX2 + FMA variants (Isa::avx2: CPUs without AVX-512). Each file is compiled with -mavx2 -mfma
// and runs only where isa_supported(Isa::avx2) says so; dispatch.cpp makes that choice.

#include <cstddef>
#include <span>

#include "backend/cpu/convert.h"
#include "backend/cpu/variants.h"

namespace s1::backend::cpu::x86 {

void layer_norm_avx2(std::span<const float> x, std::span<const float> residual, std::span<const float> gamma,
                     std::span<const float> beta, float eps, std::span<float> y);
void rms_norm_avx2(std::span<const float> x, std::span<const float> weight, float eps, std::span<float> y);
void silu_mul_avx2(std::span<const float> gate, std::span<const float> up, std::span<float> y);
void gelu_avx2(std::span<const float> x, std::span<float> y);
void gelu_mul_avx2(std::span<const float> x, std::span<const float> gate, std::span<float> y);
void gelu_mul_bf16_avx2(std::span<const Bf16Bits> x, std::span<const Bf16Bits> gate, std::span<float> y);
void softmax_avx2(std::span<const float> x, std::size_t columns, std::span<float> y);
void attention_head_avx2(const AttentionHeadTask& task);
void cached_attention_head_avx2(const CachedAttentionHeadTask& task);

}  // namespace s1::backend::cpu::x86
