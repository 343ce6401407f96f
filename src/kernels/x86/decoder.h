#pragma once

// Optimised x86 variants of the causal-decoder ops; dispatch.cpp chooses them from CPUID.

#include "kernels/variants.h"

namespace s1::kernels::x86 {

void cached_attention_head_avx512(const CachedAttentionHeadTask& task);

}  // namespace s1::kernels::x86
