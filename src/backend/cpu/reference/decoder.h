#pragma once

// Plain scalar implementations of the causal-decoder ops (RMSNorm, RoPE, SwiGLU, cached attention):
// the definitions the public entry points run over row (or head) chunks, and that every optimised
// variant is tested against. Serial; accumulation in double where it sums.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backend/cpu/variants.h"

namespace s1::backend::cpu::reference {

void rms_norm(std::span<const float> x, std::span<const float> weight, float eps, std::span<float> y);

// inv_freq[j] = 1 / theta^(2j / rotary_dim), in fp32 the way Transformers computes it.
[[nodiscard]] std::vector<float> rope_inverse_frequencies(std::size_t rotary_dim, float theta);
// RoPE on `rows` rows (row r at x + r·row_stride) given the inverse frequencies.
void apply_rope(std::span<float> x, std::size_t rows, std::size_t row_stride, std::size_t heads, std::size_t head_dim,
                std::span<const float> inverse_frequencies, std::span<const int64_t> positions);
// Multimodal RoPE: frequency j rotates by the position of axis axes[j] (0, 1 or 2) of row r,
// positions[axis · rows + r] (the axes' positions one block after another).
void apply_mrope(std::span<float> x, std::size_t rows, std::size_t row_stride, std::size_t heads, std::size_t head_dim,
                 std::span<const float> inverse_frequencies, std::span<const uint8_t> axes,
                 std::span<const int64_t> positions);
// cos and sin of position · inv_freq[j] for each j, in fp32 as Transformers computes them.
void rope_angles(std::span<const float> inverse_frequencies, int64_t position, std::span<float> cosines,
                 std::span<float> sines);
// RoPE on `rows` rows with precomputed angles: row r uses cosines/sines [positions[r]·half, +half).
void apply_rope(std::span<float> x, std::size_t rows, std::size_t row_stride, std::size_t heads, std::size_t head_dim,
                std::size_t half, std::span<const float> cosines, std::span<const float> sines,
                std::span<const int64_t> positions);

void silu_mul(std::span<const float> gate, std::span<const float> up, std::span<float> y);

// One query head over its query rows (backend/cpu/variants.h), accumulating in double.
void cached_attention_head(const CachedAttentionHeadTask& task);

}  // namespace s1::backend::cpu::reference
