#include <algorithm>
#include <cassert>
#include <vector>

#include "backend/cpu/x86/attention_avx512_blocks.h"
#include "backend/cpu/x86/avx512_math.h"
#include "backend/cpu/x86/decoder.h"

namespace s1::backend::cpu::x86 {
namespace {

using namespace avx512_attention;

struct Scratch {
  std::vector<float> keys_transposed;  // [head_dim][padded keys]
  std::vector<float> queries;          // [block_rows][head_dim], pre-scaled
  std::vector<float> scores;           // [block_rows][padded keys]
};

Scratch& thread_scratch() {
  thread_local Scratch scratch;
  return scratch;
}

// Fewer rows than a block: the transposed path would transpose every key and compute a whole block
// for them, so each row instead dots its query with the key rows in place (one horizontal sum per key).
void attend_rows_in_place(const CachedAttentionHeadTask& task, Scratch& scratch) {
  const std::size_t d = task.head_dim;
  constexpr std::size_t group_vectors = 8;  // output accumulators kept in registers per pass
  for (std::size_t i = 0; i < task.m; ++i) {
    const float* q = task.q + i * task.q_stride;
    const std::size_t visible = task.causal ? task.first_query_position + i + 1 : task.n;
    const std::size_t visible_padded = (visible + 15) / 16 * 16;
    scratch.scores.resize(visible_padded);
    float* scores = scratch.scores.data();
    for (std::size_t j = 0; j < visible; ++j) {
      const float* key = task.keys + j * task.kv_stride;
      __m512 acc = _mm512_setzero_ps();
      for (std::size_t c = 0; c < d; c += 16) {
        const __mmask16 lanes = first_lanes(d - c);
        acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(lanes, q + c), _mm512_maskz_loadu_ps(lanes, key + c), acc);
      }
      scores[j] = sum_vector(acc) * task.scale;
    }
    std::fill(scores + visible, scores + visible_padded, 0.0F);
    const __m512 inverse_sum = _mm512_set1_ps(softmax_numerators(scores, visible, visible_padded));
    float* out = task.out + i * task.out_stride;
    for (std::size_t c0 = 0; c0 < d; c0 += 16 * group_vectors) {
      const std::size_t vectors = std::min(group_vectors, (d - c0 + 15) / 16);
      __m512 acc[group_vectors];
      for (std::size_t v = 0; v < group_vectors; ++v) acc[v] = _mm512_setzero_ps();
      for (std::size_t j = 0; j < visible; ++j) {
        const __m512 p = _mm512_set1_ps(scores[j]);
        const float* value = task.values + j * task.kv_stride + c0;
        for (std::size_t v = 0; v < vectors; ++v)
          acc[v] = _mm512_fmadd_ps(p, _mm512_maskz_loadu_ps(first_lanes(d - c0 - 16 * v), value + 16 * v), acc[v]);
      }
      for (std::size_t v = 0; v < vectors; ++v)
        _mm512_mask_storeu_ps(out + c0 + 16 * v, first_lanes(d - c0 - 16 * v), _mm512_mul_ps(acc[v], inverse_sum));
    }
  }
}

}  // namespace

void cached_attention_head_avx512(const CachedAttentionHeadTask& task) {
  assert(task.head_dim > 0 && (!task.causal || task.first_query_position + task.m <= task.n));
  const std::size_t d = task.head_dim;
  // Keys any row of this task can see; each row's own limit is applied by the softmax mask.
  const std::size_t key_count = task.causal ? task.first_query_position + task.m : task.n;
  const std::size_t padded = (key_count + 15) / 16 * 16;
  Scratch& scratch = thread_scratch();
  if (task.m < block_rows) {
    attend_rows_in_place(task, scratch);
    return;
  }
  scratch.keys_transposed.resize(d * padded);
  scratch.queries.resize(block_rows * d);
  scratch.scores.resize(block_rows * padded);
  float* keys_transposed = scratch.keys_transposed.data();
  float* scores = scratch.scores.data();
  // Transposed 16 keys at a time: each write fills one cache line of kT while the 16 key rows being
  // read stay in L1 (a plain column-by-column transpose touched a new line on every write).
  for (std::size_t j0 = 0; j0 < padded; j0 += 16) {
    const std::size_t keys_here = std::min<std::size_t>(16, key_count - j0);
    for (std::size_t c = 0; c < d; ++c) {
      float* column = keys_transposed + c * padded + j0;
      for (std::size_t j = 0; j < keys_here; ++j) column[j] = task.keys[(j0 + j) * task.kv_stride + c];
      for (std::size_t j = keys_here; j < 16; ++j) column[j] = 0.0F;  // padding keys, masked later
    }
  }

  for (std::size_t i0 = 0; i0 < task.m; i0 += block_rows) {
    const std::size_t rows = std::min(block_rows, task.m - i0);
    std::fill(scratch.queries.begin(), scratch.queries.end(), 0.0F);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < d; ++c)
        scratch.queries[r * d + c] = task.q[(i0 + r) * task.q_stride + c] * task.scale;

    // Keys this block can see, rounded up to whole vectors (padding keys are zero, then masked).
    const std::size_t end = task.causal ? task.first_query_position + i0 + rows : key_count;
    const std::size_t end_padded = (end + 15) / 16 * 16;
    score_blocks(scratch.queries.data(), keys_transposed, padded, d, 0, end_padded, scores);

    float inverse_sum[block_rows] = {};
    float* out_rows[block_rows] = {};
    for (std::size_t r = 0; r < block_rows; ++r) {
      if (r >= rows) {
        std::fill_n(scores + r * padded, end_padded, 0.0F);
        continue;
      }
      const std::size_t visible = task.causal ? task.first_query_position + i0 + r + 1 : key_count;
      inverse_sum[r] = softmax_numerators(scores + r * padded, visible, end_padded);
      out_rows[r] = task.out + (i0 + r) * task.out_stride;
    }
    for (std::size_t c0 = 0; c0 < d; c0 += 32)
      weighted_values(scores, padded, 0, end, task.values, task.kv_stride, d, c0, inverse_sum, out_rows);
  }
}

}  // namespace s1::backend::cpu::x86
