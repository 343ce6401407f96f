#pragma once

// AVX-512 variants of the Gated DeltaNet ops (backend/cpu/gated_delta.h); dispatch.cpp chooses them from CPUID.

#include <cstddef>
#include <span>

#include "backend/cpu/gated_delta.h"

namespace s1::backend::cpu::x86 {

// Same contract as reference::gated_delta_rule_head, with the chunk's products in fp32 FMA.
void gated_delta_rule_head_avx512(const GatedDeltaInputs& inputs, GatedDeltaShape shape, std::size_t head,
                                  std::size_t first_position, std::size_t chunk_size, std::span<float> head_state,
                                  std::span<float> out);

// Same contract as reference::causal_conv1d_silu (channels [channel_begin, channel_end)), fp32 sums.
void causal_conv1d_silu_avx512(std::span<const float> x, std::size_t rows, std::size_t x_stride,
                               std::span<const float> weight, std::size_t kernel, std::span<float> tail,
                               std::span<float> y, std::size_t channel_begin, std::size_t channel_end);

// Same contracts as reference::l2_norm_scaled and reference::gated_rms_norm, with fp32 sums of squares in
// sixteen lanes (as torch's vectorised fp32 reductions) and a vector exp in SiLU.
void l2_norm_scaled_avx512(std::span<const float> x, std::size_t dim, float eps, float scale, std::span<float> y);
void gated_rms_norm_avx512(std::span<const float> x, std::span<const float> gate, std::span<const float> weight,
                           float eps, std::span<float> y);

}  // namespace s1::backend::cpu::x86
