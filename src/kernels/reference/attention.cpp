#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/reference/reference.h"

namespace s1::kernels::reference {

void attention_head(const AttentionHeadTask& task) {
  assert(task.length <= task.seq);
  const std::size_t d = task.head_dim;
  std::vector<double> scores(task.length);
  for (std::size_t i = 0; i < task.seq; ++i) {
    float* out = task.out + i * task.out_stride;
    if (i >= task.length) {
      for (std::size_t c = 0; c < d; ++c) out[c] = 0.0F;
      continue;
    }
    std::size_t visible = task.causal ? i + 1 : task.length;
    std::size_t first = 0;
    if (task.window != 0) {
      first = i > task.window ? i - task.window : 0;
      visible = std::min(visible, i + task.window + 1);
    }
    double largest = -std::numeric_limits<double>::infinity();
    for (std::size_t j = first; j < visible; ++j) {
      double dot = 0.0;
      for (std::size_t c = 0; c < d; ++c)
        dot += static_cast<double>(task.q[i * task.qkv_stride + c]) * task.k[j * task.qkv_stride + c];
      scores[j] = dot * task.scale;
      largest = std::fmax(largest, scores[j]);
    }
    double sum = 0.0;
    for (std::size_t j = first; j < visible; ++j) {
      scores[j] = std::exp(scores[j] - largest);
      sum += scores[j];
    }
    for (std::size_t c = 0; c < d; ++c) {
      double value = 0.0;
      for (std::size_t j = first; j < visible; ++j) value += scores[j] * task.v[j * task.qkv_stride + c];
      out[c] = static_cast<float>(value / sum);
    }
  }
}

}  // namespace s1::kernels::reference
