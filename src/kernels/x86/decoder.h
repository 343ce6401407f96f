#pragma once

// Optimised x86 variants of the causal-decoder ops; dispatch.cpp chooses them from CPUID.

#include <span>

#include "kernels/variants.h"

namespace s1::kernels::x86 {

void cached_attention_head_avx512(const CachedAttentionHeadTask& task);
// Q·Kᵀ and P·V on AMX tiles with Q, K, P and V rounded to bf16 (Precision::bf16 only); other
// head sizes and blocks of fewer than 16 rows run cached_attention_head_avx512.
void cached_attention_head_amx_bf16(const CachedAttentionHeadTask& task);
void rms_norm_avx512(std::span<const float> x, std::span<const float> weight, float eps, std::span<float> y);
void silu_mul_avx512(std::span<const float> gate, std::span<const float> up, std::span<float> y);

}  // namespace s1::kernels::x86
