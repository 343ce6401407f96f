#pragma once

// Plain scalar implementations of the causal-decoder ops (RMSNorm, RoPE, SwiGLU, cached attention):
// the definitions the public entry points run over row (or head) chunks, and that every optimised
// variant is tested against. Serial; accumulation in double where it sums.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/cached_attention.h"

namespace s1::kernels::reference {

void rms_norm(std::span<const float> x, std::span<const float> weight, float eps, std::span<float> y);

// inv_freq[j] = 1 / theta^(2j / rotary_dim), in fp32 the way Transformers computes it.
[[nodiscard]] std::vector<float> rope_inverse_frequencies(std::size_t rotary_dim, float theta);
// RoPE on `rows` rows (row r at x + r·row_stride) given the inverse frequencies.
void apply_rope(std::span<float> x, std::size_t rows, std::size_t row_stride, std::size_t heads,
                std::size_t head_dim, std::span<const float> inverse_frequencies,
                std::span<const int64_t> positions);

void silu_mul(std::span<const float> gate, std::span<const float> up, std::span<float> y);

// One query head of one query row against keys 0..visible−1 of its key/value head.
struct CachedAttentionRowTask {
  const float* q = nullptr;       // head_dim values
  const float* keys = nullptr;    // key row j at keys + j·kv_stride
  const float* values = nullptr;  // value row j at values + j·kv_stride
  std::size_t kv_stride = 0;
  std::size_t visible = 0;
  std::size_t head_dim = 0;
  float scale = 1.0F;
  float* out = nullptr;  // head_dim values
};
// scores: scratch of at least `visible` values.
void cached_attention_row(const CachedAttentionRowTask& task, std::span<double> scores);

// The whole op, serially (for tests and as its definition; see kernels/cached_attention.h).
void cached_attention(std::span<const float> q, std::size_t q_stride, std::size_t m, std::span<const float> keys,
                      std::span<const float> values, std::size_t n, std::size_t first_query_position, bool causal,
                      CachedAttentionShape shape, std::span<float> out);

}  // namespace s1::kernels::reference
