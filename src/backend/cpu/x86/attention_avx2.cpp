// Attention heads and cached attention heads in AVX2 + FMA, the AVX-512 variants' blocking on eight
// lanes: four query rows share every K and V load (4 rows × 2 vectors = 8 independent FMA chains in
// 16 ymm registers), keys are transposed once per head, so a score block is plain FMAs.

#include <algorithm>
#include <cassert>
#include <limits>
#include <vector>

#include "backend/cpu/reference/reference.h"
#include "backend/cpu/x86/avx2.h"
#include "backend/cpu/x86/avx2_math.h"

namespace s1::backend::cpu::x86 {
namespace {

using avx2::first_lanes;
using avx2::load;
using avx2::store;

constexpr std::size_t block_rows = 4;
constexpr std::size_t key_block = 16;  // keys per score block (two vectors); padded lengths are multiples

std::size_t padded_keys(std::size_t count) { return (count + key_block - 1) / key_block * key_block; }

struct Scratch {
  std::vector<float> keys_transposed;  // [head_dim][padded keys]
  std::vector<float> queries;          // [block_rows][head_dim], pre-scaled
  std::vector<float> scores;           // [block_rows][padded keys]
  std::vector<float> rotated;          // [head_dim] one query or key after RoPE
  std::vector<float> out_block;        // [block_rows][head_dim] rows bound for out_bf16
};

Scratch& thread_scratch() {
  thread_local Scratch scratch;
  return scratch;
}

// scores[r][j0, j0 + 16) = Σ_c q[r][c] · kT[c][j0 ..]
void score_block(const float* queries, const float* keys_transposed, std::size_t padded, std::size_t d, std::size_t j0,
                 float* scores) {
  __m256 acc[block_rows][2];
  for (std::size_t r = 0; r < block_rows; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (std::size_t c = 0; c < d; ++c) {
    const __m256 k0 = _mm256_loadu_ps(keys_transposed + c * padded + j0);
    const __m256 k1 = _mm256_loadu_ps(keys_transposed + c * padded + j0 + 8);
#pragma GCC unroll 4
    for (std::size_t r = 0; r < block_rows; ++r) {
      const __m256 q = _mm256_broadcast_ss(queries + r * d + c);
      acc[r][0] = _mm256_fmadd_ps(q, k0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(q, k1, acc[r][1]);
    }
  }
  for (std::size_t r = 0; r < block_rows; ++r) {
    _mm256_storeu_ps(scores + r * padded + j0, acc[r][0]);
    _mm256_storeu_ps(scores + r * padded + j0 + 8, acc[r][1]);
  }
}

// out[r][c0, c0 + 16) = inverse_sum[r] · Σ_{begin ≤ j < end} p[r][j] · v[j][c0 ..], lanes beyond d
// left alone; rows whose out_rows entry is null are skipped.
void weighted_values(const float* scores, std::size_t padded, std::size_t begin, std::size_t end, const float* values,
                     std::size_t stride, std::size_t d, std::size_t c0, const float* inverse_sum,
                     float* const* out_rows) {
  const __m256i low = first_lanes(d - c0);
  const __m256i high = d > c0 + 8 ? first_lanes(d - c0 - 8) : _mm256_setzero_si256();
  __m256 acc[block_rows][2];
  for (std::size_t r = 0; r < block_rows; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (std::size_t j = begin; j < end; ++j) {
    const __m256 v0 = load(values + j * stride + c0, low);
    const __m256 v1 = load(values + j * stride + c0 + 8, high);
#pragma GCC unroll 4
    for (std::size_t r = 0; r < block_rows; ++r) {
      const __m256 p = _mm256_broadcast_ss(scores + r * padded + j);
      acc[r][0] = _mm256_fmadd_ps(p, v0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(p, v1, acc[r][1]);
    }
  }
  for (std::size_t r = 0; r < block_rows; ++r) {
    if (out_rows[r] == nullptr) continue;
    const __m256 scale = _mm256_set1_ps(inverse_sum[r]);
    store(out_rows[r] + c0, low, _mm256_mul_ps(acc[r][0], scale));
    store(out_rows[r] + c0 + 8, high, _mm256_mul_ps(acc[r][1], scale));
  }
}

// Keys [0, count) (row j at keys + j·stride, after `row` maps it) into kT [d][padded], padding keys zero.
// Sixteen keys at a time, so each write fills one cache line of kT while the rows read stay in L1.
template <class Row>
void transpose_keys(std::size_t count, std::size_t padded, std::size_t d, Row row, float* keys_transposed) {
  for (std::size_t j0 = 0; j0 < padded; j0 += key_block) {
    const std::size_t here = std::min(key_block, count - std::min(count, j0));
    const float* rows[key_block];
    for (std::size_t j = 0; j < here; ++j) rows[j] = row(j0 + j);
    for (std::size_t c = 0; c < d; ++c) {
      float* column = keys_transposed + c * padded + j0;
      for (std::size_t j = 0; j < here; ++j) column[j] = rows[j][c];
      for (std::size_t j = here; j < key_block; ++j) column[j] = 0.0F;
    }
  }
}

// Query rows [0, rows) of a block (row r from query_row(r)) times scale, the rest of the block zero.
template <class Row>
void scaled_query_rows(std::size_t rows, std::size_t d, float scale, Row query_row, float* queries) {
  std::fill_n(queries, block_rows * d, 0.0F);
  const __m256 factor = _mm256_set1_ps(scale);
  for (std::size_t r = 0; r < rows; ++r) {
    const float* q = query_row(r);
    for (std::size_t c = 0; c < d; c += 8) {
      const __m256i m = first_lanes(d - c);
      store(queries + r * d + c, m, _mm256_mul_ps(load(q + c, m), factor));
    }
  }
}

// Rotate-half RoPE of one head row into out, as rotate_half_row in avx512_math.h.
void rotate_half_row(const float* x, std::size_t d, const float* cosines, const float* sines, float* out) {
  const std::size_t half = d / 2;
  for (std::size_t c = 0; c < half; c += 8) {
    const __m256i m = first_lanes(half - c);
    const __m256 first = load(x + c, m);
    const __m256 second = load(x + half + c, m);
    const __m256 cosine = load(cosines + c, m);
    const __m256 sine = load(sines + c, m);
    store(out + c, m, _mm256_sub_ps(_mm256_mul_ps(first, cosine), _mm256_mul_ps(second, sine)));
    store(out + half + c, m, _mm256_add_ps(_mm256_mul_ps(second, cosine), _mm256_mul_ps(first, sine)));
  }
}

}  // namespace

void attention_head_avx2(const AttentionHeadTask& bf16_or_fp32_task) {
  // bf16 inputs reach this variant only on CPUs without AVX-512: widening them first is enough there.
  thread_local std::vector<float> widened_rows;
  const AttentionHeadTask task = reference::widen_bf16_inputs(bf16_or_fp32_task, widened_rows);
  assert(task.length <= task.seq && task.head_dim > 0);
  const std::size_t d = task.head_dim;
  const std::size_t length = task.length;
  const std::size_t padded = padded_keys(length);
  Scratch& scratch = thread_scratch();
  scratch.keys_transposed.resize(d * padded);
  scratch.queries.resize(block_rows * d);
  scratch.scores.resize(block_rows * padded);
  scratch.rotated.resize(d);
  float* scores = scratch.scores.data();
  const std::size_t half = d / 2;
  const auto head_row = [&](const float* x, std::size_t t) {
    if (task.rope_cosines == nullptr) return x + t * task.qkv_stride;
    rotate_half_row(x + t * task.qkv_stride, d, task.rope_cosines + t * half, task.rope_sines + t * half,
                    scratch.rotated.data());
    return static_cast<const float*>(scratch.rotated.data());
  };
  if (task.rope_cosines == nullptr) {
    transpose_keys(
        length, padded, d, [&](std::size_t j) { return task.k + j * task.qkv_stride; }, scratch.keys_transposed.data());
  } else {
    // Rotated keys one at a time (each overwrites scratch.rotated), straight into their column.
    for (std::size_t j = 0; j < padded; ++j) {
      const float* key = j < length ? head_row(task.k, j) : nullptr;
      for (std::size_t c = 0; c < d; ++c) scratch.keys_transposed[c * padded + j] = key == nullptr ? 0.0F : key[c];
    }
  }

  const std::size_t query_stop = std::min(task.query_stop(), length);
  if (task.out_bf16 != nullptr) scratch.out_block.resize(block_rows * d);
  for (std::size_t i0 = task.query_begin; i0 < query_stop; i0 += block_rows) {
    const std::size_t rows = std::min(block_rows, query_stop - i0);
    scaled_query_rows(
        rows, d, task.scale, [&](std::size_t r) { return head_row(task.q, i0 + r); }, scratch.queries.data());
    // Keys this block can see, [begin, end), widened to whole blocks (padding keys are zero, then
    // masked); a sliding window narrows both ends.
    const auto [begin, end] = task.block_keys(i0, rows, key_block);
    const std::size_t end_padded = padded_keys(end);
    for (std::size_t j0 = begin; j0 < end_padded; j0 += key_block)
      score_block(scratch.queries.data(), scratch.keys_transposed.data(), padded, d, j0, scores);

    float inverse_sum[block_rows] = {};
    float* out_rows[block_rows] = {};
    for (std::size_t r = 0; r < block_rows; ++r) {
      float* row_scores = scores + r * padded;
      if (r >= rows) {
        std::fill(row_scores + begin, row_scores + end_padded, 0.0F);
        continue;
      }
      const std::size_t i = i0 + r;
      const auto [first, visible] = task.visible_keys(i);
      // Keys left of this row's window take no part in the maximum and are zeroed before the sum.
      std::fill(row_scores + begin, row_scores + first, -std::numeric_limits<float>::infinity());
      inverse_sum[r] = avx2::softmax_numerators(row_scores + begin, visible - begin, end_padded - begin);
      std::fill(row_scores + begin, row_scores + first, 0.0F);
      out_rows[r] = task.out_bf16 != nullptr ? scratch.out_block.data() + r * d : task.out + i * task.out_stride;
    }
    for (std::size_t c0 = 0; c0 < d; c0 += 16)
      weighted_values(scores, padded, begin, end, task.v, task.qkv_stride, d, c0, inverse_sum, out_rows);
    if (task.out_bf16 != nullptr) {
      for (std::size_t r = 0; r < rows; ++r)
        reference::convert_fp32_to_bf16(std::span(scratch.out_block.data() + r * d, d),
                                        std::span(task.out_bf16 + (i0 + r) * task.out_stride, d));
    }
  }
  task.zero_rows_past_length();
}

void cached_attention_head_avx2(const CachedAttentionHeadTask& task) {
  assert(task.head_dim > 0 && (!task.causal || task.first_query_position + task.m <= task.n));
  const std::size_t d = task.head_dim;
  const std::size_t key_count = task.causal ? task.first_query_position + task.m : task.n;
  Scratch& scratch = thread_scratch();
  if (task.m < block_rows) {
    // A decode step's few rows: each row dots its query with the key rows in place (one horizontal
    // sum per key) instead of transposing every key for a mostly empty block.
    for (std::size_t i = 0; i < task.m; ++i) {
      const float* q = task.q + i * task.q_stride;
      const std::size_t visible = task.causal ? task.first_query_position + i + 1 : task.n;
      const std::size_t visible_padded = (visible + 7) / 8 * 8;
      scratch.scores.resize(visible_padded);
      float* scores = scratch.scores.data();
      for (std::size_t j = 0; j < visible; ++j) {
        const float* key = task.keys + j * task.kv_stride;
        __m256 acc = _mm256_setzero_ps();
        for (std::size_t c = 0; c < d; c += 8) {
          const __m256i m = first_lanes(d - c);
          acc = _mm256_fmadd_ps(load(q + c, m), load(key + c, m), acc);
        }
        scores[j] = avx2::sum_vector(acc) * task.scale;
      }
      std::fill(scores + visible, scores + visible_padded, 0.0F);
      const float inverse_sum = avx2::softmax_numerators(scores, visible, visible_padded);
      float* out_rows[block_rows] = {task.out + i * task.out_stride};
      const float inverse_sums[block_rows] = {inverse_sum};
      // weighted_values reads block_rows score rows: the others (never written) alias this one.
      for (std::size_t c0 = 0; c0 < d; c0 += 16)
        weighted_values(scores, 0, 0, visible, task.values, task.kv_stride, d, c0, inverse_sums, out_rows);
    }
    return;
  }
  const std::size_t padded = padded_keys(key_count);
  scratch.keys_transposed.resize(d * padded);
  scratch.queries.resize(block_rows * d);
  scratch.scores.resize(block_rows * padded);
  float* scores = scratch.scores.data();
  transpose_keys(
      key_count, padded, d, [&](std::size_t j) { return task.keys + j * task.kv_stride; },
      scratch.keys_transposed.data());
  for (std::size_t i0 = 0; i0 < task.m; i0 += block_rows) {
    const std::size_t rows = std::min(block_rows, task.m - i0);
    scaled_query_rows(
        rows, d, task.scale, [&](std::size_t r) { return task.q + (i0 + r) * task.q_stride; }, scratch.queries.data());
    const std::size_t end = task.causal ? task.first_query_position + i0 + rows : key_count;
    const std::size_t end_padded = padded_keys(end);
    for (std::size_t j0 = 0; j0 < end_padded; j0 += key_block)
      score_block(scratch.queries.data(), scratch.keys_transposed.data(), padded, d, j0, scores);
    float inverse_sum[block_rows] = {};
    float* out_rows[block_rows] = {};
    for (std::size_t r = 0; r < block_rows; ++r) {
      if (r >= rows) {
        std::fill_n(scores + r * padded, end_padded, 0.0F);
        continue;
      }
      const std::size_t visible = task.causal ? task.first_query_position + i0 + r + 1 : key_count;
      inverse_sum[r] = avx2::softmax_numerators(scores + r * padded, visible, end_padded);
      out_rows[r] = task.out + (i0 + r) * task.out_stride;
    }
    for (std::size_t c0 = 0; c0 < d; c0 += 16)
      weighted_values(scores, padded, 0, end, task.values, task.kv_stride, d, c0, inverse_sum, out_rows);
  }
}

}  // namespace s1::backend::cpu::x86
