#include <cassert>
#include <cmath>
#include <limits>

#include "backend/cpu/reference/decoder.h"

namespace s1::backend::cpu::reference {

void cached_attention_head(const CachedAttentionHeadTask& task) {
  assert(!task.causal || task.first_query_position + task.m <= task.n);
  const std::size_t d = task.head_dim;
  std::vector<double> scores(task.n);
  for (std::size_t i = 0; i < task.m; ++i) {
    const float* q = task.q + i * task.q_stride;
    const std::size_t visible = task.causal ? task.first_query_position + i + 1 : task.n;
    double largest = -std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j < visible; ++j) {
      const float* key = task.keys + j * task.kv_stride;
      double dot = 0.0;
      for (std::size_t c = 0; c < d; ++c) dot += static_cast<double>(q[c]) * key[c];
      scores[j] = dot * task.scale;
      largest = std::fmax(largest, scores[j]);
    }
    double sum = 0.0;
    for (std::size_t j = 0; j < visible; ++j) {
      scores[j] = std::exp(scores[j] - largest);
      sum += scores[j];
    }
    float* out = task.out + i * task.out_stride;
    for (std::size_t c = 0; c < d; ++c) {
      double value = 0.0;
      for (std::size_t j = 0; j < visible; ++j) value += scores[j] * task.values[j * task.kv_stride + c];
      out[c] = static_cast<float>(value / sum);
    }
  }
}

}  // namespace s1::backend::cpu::reference
