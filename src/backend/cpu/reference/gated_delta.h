#pragma once

// Plain scalar implementations of the Gated DeltaNet ops (backend/cpu/gated_delta.h): the definitions
// the public entry points run per channel range, row range or value head. Serial; sums in double.

#include <cstddef>
#include <span>

#include "backend/cpu/gated_delta.h"

namespace s1::backend::cpu::reference {

// Channels [channel_begin, channel_end) of backend::cpu::causal_conv1d_silu (same arguments).
void causal_conv1d_silu(std::span<const float> x, std::size_t rows, std::size_t x_stride,
                        std::span<const float> weight, std::size_t kernel, std::span<float> tail,
                        std::span<float> y, std::size_t channel_begin, std::size_t channel_end);

void l2_norm_scaled(std::span<const float> x, std::size_t dim, float eps, float scale, std::span<float> y);

void gated_rms_norm(std::span<const float> x, std::span<const float> gate, std::span<const float> weight, float eps,
                    std::span<float> y);

// Value head `head` of backend::cpu::gated_delta_rule; head_state: [k_dim, v_dim] of that head.
void gated_delta_rule_head(const GatedDeltaInputs& inputs, GatedDeltaShape shape, std::size_t head,
                           std::size_t first_position, std::size_t chunk_size, std::span<float> head_state,
                           std::span<float> out);

// The token-by-token recurrence itself (every head, serially): the definition the chunked form is
// tested against.
void gated_delta_rule_recurrent(const GatedDeltaInputs& inputs, GatedDeltaShape shape, std::span<float> state,
                                std::span<float> out);

}  // namespace s1::backend::cpu::reference
