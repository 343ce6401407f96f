#include <algorithm>
#include <bit>
#include <cstdint>
#include <cassert>
#include <cmath>
#include <limits>
#include <vector>

#include "backend/cpu/reference/decoder.h"
#include "backend/cpu/reference/reference.h"

namespace s1::backend::cpu::reference {

AttentionHeadTask widen_bf16_inputs(const AttentionHeadTask& task, std::vector<float>& storage) {
  if (task.q_bf16 == nullptr) return task;
  assert(task.k_bf16 != nullptr && task.v_bf16 != nullptr);
  const std::size_t d = task.head_dim;
  // Rows [0, length) are all a head reads: queries, keys and values side by side, 3·d per row.
  storage.resize(task.length * 3 * d);
  const auto widen = [](Bf16Bits bits) { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); };
  for (std::size_t t = 0; t < task.length; ++t) {
    for (std::size_t c = 0; c < d; ++c) {
      storage[t * 3 * d + c] = widen(task.q_bf16[t * task.qkv_stride + c]);
      storage[t * 3 * d + d + c] = widen(task.k_bf16[t * task.qkv_stride + c]);
      storage[t * 3 * d + 2 * d + c] = widen(task.v_bf16[t * task.qkv_stride + c]);
    }
  }
  AttentionHeadTask widened = task;
  widened.q = storage.data();
  widened.k = storage.data() + d;
  widened.v = storage.data() + 2 * d;
  widened.qkv_stride = 3 * d;
  widened.q_bf16 = widened.k_bf16 = widened.v_bf16 = nullptr;
  return widened;
}

void attention_head(const AttentionHeadTask& bf16_or_fp32_task) {
  std::vector<float> widened_rows;
  const AttentionHeadTask task = widen_bf16_inputs(bf16_or_fp32_task, widened_rows);
  assert(task.length <= task.seq);
  const std::size_t d = task.head_dim;
  // Fused RoPE: the same rotation apply_rope makes, on copies of this head's queries and keys.
  std::vector<float> rotated_q, rotated_k;
  if (task.rope_cosines != nullptr) {
    std::vector<int64_t> positions(task.length);
    for (std::size_t t = 0; t < task.length; ++t) positions[t] = static_cast<int64_t>(t);
    const auto rotated = [&](const float* x) {
      std::vector<float> rows(task.length * d);
      for (std::size_t t = 0; t < task.length; ++t) std::copy_n(x + t * task.qkv_stride, d, rows.data() + t * d);
      apply_rope(rows, task.length, d, 1, d, d / 2, std::span(task.rope_cosines, task.length * d / 2),
                 std::span(task.rope_sines, task.length * d / 2), positions);
      return rows;
    };
    rotated_q = rotated(task.q);
    rotated_k = rotated(task.k);
  }
  const auto q_at = [&](std::size_t i, std::size_t c) {
    return rotated_q.empty() ? task.q[i * task.qkv_stride + c] : rotated_q[i * d + c];
  };
  const auto k_at = [&](std::size_t j, std::size_t c) {
    return rotated_k.empty() ? task.k[j * task.qkv_stride + c] : rotated_k[j * d + c];
  };
  std::vector<double> scores(task.length);
  std::vector<float> row(task.out_bf16 != nullptr ? d : 0);
  for (std::size_t i = task.query_begin; i < task.query_stop(); ++i) {
    float* out = task.out_bf16 != nullptr ? row.data() : task.out + i * task.out_stride;
    const auto store_bf16 = [&] {
      if (task.out_bf16 != nullptr) convert_fp32_to_bf16(row, std::span(task.out_bf16 + i * task.out_stride, d));
    };
    if (i >= task.length) {
      for (std::size_t c = 0; c < d; ++c) out[c] = 0.0F;
      store_bf16();
      continue;
    }
    const auto [first, visible] = task.visible_keys(i);
    double largest = -std::numeric_limits<double>::infinity();
    for (std::size_t j = first; j < visible; ++j) {
      double dot = 0.0;
      for (std::size_t c = 0; c < d; ++c)
        dot += static_cast<double>(q_at(i, c)) * k_at(j, c);
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
    store_bf16();
  }
}

}  // namespace s1::backend::cpu::reference
