#include <cassert>
#include <cmath>
#include <limits>

#include "kernels/reference/decoder.h"

namespace s1::kernels::reference {

void cached_attention_row(const CachedAttentionRowTask& task, std::span<double> scores) {
  assert(task.visible > 0 && scores.size() >= task.visible);
  const std::size_t d = task.head_dim;
  double largest = -std::numeric_limits<double>::infinity();
  for (std::size_t j = 0; j < task.visible; ++j) {
    const float* key = task.keys + j * task.kv_stride;
    double dot = 0.0;
    for (std::size_t c = 0; c < d; ++c) dot += static_cast<double>(task.q[c]) * key[c];
    scores[j] = dot * task.scale;
    largest = std::fmax(largest, scores[j]);
  }
  double sum = 0.0;
  for (std::size_t j = 0; j < task.visible; ++j) {
    scores[j] = std::exp(scores[j] - largest);
    sum += scores[j];
  }
  for (std::size_t c = 0; c < d; ++c) {
    double value = 0.0;
    for (std::size_t j = 0; j < task.visible; ++j) value += scores[j] * task.values[j * task.kv_stride + c];
    task.out[c] = static_cast<float>(value / sum);
  }
}

void cached_attention(std::span<const float> q, std::size_t q_stride, std::size_t m, std::span<const float> keys,
                      std::span<const float> values, std::size_t n, std::size_t first_query_position, bool causal,
                      CachedAttentionShape shape, std::span<float> out) {
  assert(shape.heads > 0 && shape.kv_heads > 0 && shape.heads % shape.kv_heads == 0);
  const std::size_t kv_stride = shape.kv_heads * shape.head_dim;
  const std::size_t out_stride = shape.heads * shape.head_dim;
  assert(keys.size() >= n * kv_stride && values.size() >= n * kv_stride && out.size() >= m * out_stride);
  assert(m == 0 || q.size() >= (m - 1) * q_stride + out_stride);
  assert(!causal || first_query_position + m <= n);
  const std::size_t group = shape.heads / shape.kv_heads;
  std::vector<double> scores(n);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t h = 0; h < shape.heads; ++h) {
      const std::size_t kv_head = h / group;
      cached_attention_row(
          CachedAttentionRowTask{
              .q = q.data() + i * q_stride + h * shape.head_dim,
              .keys = keys.data() + kv_head * shape.head_dim,
              .values = values.data() + kv_head * shape.head_dim,
              .kv_stride = kv_stride,
              .visible = causal ? first_query_position + i + 1 : n,
              .head_dim = shape.head_dim,
              .scale = shape.scale,
              .out = out.data() + i * out_stride + h * shape.head_dim,
          },
          scores);
    }
}

}  // namespace s1::kernels::reference
