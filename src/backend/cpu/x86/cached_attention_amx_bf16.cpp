#include <algorithm>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "backend/cpu/x86/amx_tiles.h"
#include "backend/cpu/x86/attention_amx_tiles.h"
#include "backend/cpu/x86/avx512_math.h"
#include "backend/cpu/x86/decoder.h"

namespace s1::backend::cpu::x86 {
namespace {

using namespace amx_attention;

struct Scratch {
  std::vector<std::uint16_t> queries;       // [16][d] bf16, pre-scaled
  std::vector<std::uint32_t> keys_pairs;    // [d/2][padded] pairs (k[j][2p], k[j][2p+1])
  std::vector<std::uint32_t> values_pairs;  // [padded/2][d] pairs (v[2q][c], v[2q+1][c])
  std::vector<float> scores;                // [16][padded]
  std::vector<std::uint16_t> weights;       // [16][padded] bf16 softmax numerators
  std::vector<float> block_out;             // [16][d]
  std::vector<std::uint16_t> key_rows;      // [16][d] 16 keys in bf16
};

Scratch& thread_scratch() {
  thread_local Scratch scratch;
  return scratch;
}

}  // namespace

void amx_bf16_key_value_layout(const float* keys, const float* values, std::size_t kv_stride, std::size_t count,
                               std::size_t padded, std::size_t d, std::uint32_t* keys_pairs,
                               std::uint32_t* values_pairs) {
  assert(d % tile_depth == 0 && padded % tile_depth == 0 && count <= padded);
  // K into the B layout of Q·Kᵀ: row p of a tile holds the channel pair (2p, 2p+1) of 16 keys.
  // 16 keys at a time go to bf16 rows, then one gather per pair index moves a pair of all 16 into
  // place (a scalar scatter wrote a different cache line of keys_pairs on every store and cost
  // more than the products for a 40-row branch over a 200-token prefix). Padding keys are zero:
  // their scores are masked anyway.
  std::vector<std::uint16_t>& key_rows = thread_scratch().key_rows;
  key_rows.resize(tile_rows * d);
  const std::size_t pairs = d / 2;
  const __m512i pair_offsets = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_epi32(static_cast<int>(pairs)));
  for (std::size_t j0 = 0; j0 < padded; j0 += tile_rows) {
    for (std::size_t j = 0; j < tile_rows; ++j) {
      std::uint16_t* row = key_rows.data() + j * d;
      if (j0 + j >= count) {
        std::fill_n(row, d, std::uint16_t{0});
        continue;
      }
      const float* k = keys + (j0 + j) * kv_stride;
      for (std::size_t c = 0; c < d; c += 32)
        store_bf16_32(row + c, _mm512_loadu_ps(k + c), _mm512_loadu_ps(k + c + 16));
    }
    for (std::size_t p = 0; p < pairs; ++p)
      _mm512_storeu_si512(keys_pairs + p * padded + j0,
                          _mm512_i32gather_epi32(_mm512_add_epi32(pair_offsets, _mm512_set1_epi32(static_cast<int>(p))),
                                                 key_rows.data(), 4));
  }
  lay_out_fp32_values(values, kv_stride, count, padded, d, values_pairs);
}

namespace {

// Keys and values of one kv head in the B layouts of amx_bf16_key_value_layout, `padded` columns.
struct LaidOutKeys {
  const std::uint32_t* keys_pairs = nullptr;
  const std::uint32_t* values_pairs = nullptr;
  std::size_t padded = 0;
};

// Softmax numerators over two score ranges of one row: [0, shared_visible) of the shared prefix's
// `shared_end` columns and [shared_end, shared_end + own_visible) of the branch's; every other
// column up to shared_end + own_end becomes 0. Returns 1 / Σ.
// Lays out `count` key/value rows in this thread's scratch, padded to whole tiles.
LaidOutKeys lay_out_in_scratch(const float* keys, const float* values, std::size_t kv_stride, std::size_t count,
                               std::size_t d) {
  const std::size_t padded = (count + tile_depth - 1) / tile_depth * tile_depth;
  Scratch& scratch = thread_scratch();
  scratch.keys_pairs.resize(d / 2 * padded);
  scratch.values_pairs.resize(padded / 2 * d);
  amx_bf16_key_value_layout(keys, values, kv_stride, count, padded, d, scratch.keys_pairs.data(),
                            scratch.values_pairs.data());
  return {scratch.keys_pairs.data(), scratch.values_pairs.data(), padded};
}

float split_softmax_numerators(float* scores, std::size_t shared_visible, std::size_t shared_end,
                               std::size_t own_visible, std::size_t own_end) {
  const __m512 lowest = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 largest = lowest;
  for (std::size_t j = 0; j < shared_visible; j += 16)
    largest = _mm512_max_ps(largest, _mm512_mask_loadu_ps(lowest, first_lanes(shared_visible - j), scores + j));
  float* own = scores + shared_end;
  for (std::size_t j = 0; j < own_visible; j += 16)
    largest = _mm512_max_ps(largest, _mm512_mask_loadu_ps(lowest, first_lanes(own_visible - j), own + j));
  const __m512 row_max = _mm512_set1_ps(max_vector(largest));
  __m512 sum = _mm512_setzero_ps();
  const auto numerators = [&](float* part, std::size_t visible, std::size_t end) {
    for (std::size_t j = 0; j < end; j += 16) {
      const __mmask16 valid = j < visible ? first_lanes(visible - j) : static_cast<__mmask16>(0);
      const __m512 e = _mm512_maskz_mov_ps(valid, exp_vector(_mm512_sub_ps(_mm512_loadu_ps(part + j), row_max)));
      _mm512_storeu_ps(part + j, e);
      sum = _mm512_add_ps(sum, e);
    }
  };
  numerators(scores, shared_visible, shared_end);
  numerators(own, own_visible, own_end);
  return 1.0F / sum_vector(sum);
}

// m query rows against an optional shared prefix (all `shared_count` keys visible to every row,
// laid out once for all branches) and the rows' own keys: row i sees own keys
// [0, own_first_visible + i) when causal, else all own_count. The tiles must be configured.
// Output row i goes to out_rows + i·out_stride, or rounded to bf16 to out_bf16 + i·out_stride when
// out_bf16 is set.
void attend(const float* q, std::size_t q_stride, std::size_t m, float scale_factor, std::size_t d,
            LaidOutKeys shared, std::size_t shared_count, LaidOutKeys own, std::size_t own_count,
            std::size_t own_first_visible, bool causal, float* out_rows, Bf16Bits* out_bf16, std::size_t out_stride) {
  Scratch& scratch = thread_scratch();
  const std::size_t width = shared.padded + own.padded;  // columns of the score and weight rows
  scratch.queries.resize(tile_rows * d);
  scratch.scores.resize(tile_rows * width);
  scratch.weights.resize(tile_rows * width);
  scratch.block_out.resize(tile_rows * d);
  const __m512 scale = _mm512_set1_ps(scale_factor);
  for (std::size_t i0 = 0; i0 < m; i0 += tile_rows) {
    const std::size_t rows = std::min(tile_rows, m - i0);
    for (std::size_t r = 0; r < tile_rows; ++r) {
      std::uint16_t* q_out = scratch.queries.data() + r * d;
      if (r >= rows) {
        std::fill_n(q_out, d, std::uint16_t{0});
        continue;
      }
      const float* q_row = q + (i0 + r) * q_stride;
      for (std::size_t c = 0; c < d; c += 32)
        store_bf16_32(q_out + c, _mm512_mul_ps(_mm512_loadu_ps(q_row + c), scale),
                      _mm512_mul_ps(_mm512_loadu_ps(q_row + c + 16), scale));
    }
    // Own keys this block can see, rounded up to whole tiles (padding keys are zero, then masked).
    const std::size_t end = causal ? own_first_visible + i0 + rows : own_count;
    const std::size_t end_padded = (end + tile_depth - 1) / tile_depth * tile_depth;

    // Scores, 16 keys per accumulator, up to 64 keys per pass: the prefix's columns, then the own.
    const auto score_columns = [&](const LaidOutKeys& keys, std::size_t columns, std::size_t first_column) {
      for (std::size_t j0 = 0; j0 < columns; j0 += 64) {
        const std::size_t count = std::min<std::size_t>(4, (columns - j0) / 16);
        zero_accumulators();
        for (std::size_t c = 0; c < d; c += tile_depth) {
          _tile_loadd(0, scratch.queries.data() + c, static_cast<long>(d * sizeof(std::uint16_t)));
          multiply_accumulate(reinterpret_cast<const std::uint8_t*>(keys.keys_pairs + (c / 2) * keys.padded + j0),
                              16 * sizeof(std::uint32_t), keys.padded * sizeof(std::uint32_t), count);
        }
        store_accumulators(scratch.scores.data() + first_column + j0, width * sizeof(float), count);
      }
    };
    score_columns(shared, shared.padded, 0);
    score_columns(own, end_padded, shared.padded);

    const std::size_t used = shared.padded + end_padded;
    float inverse_sum[tile_rows] = {};
    for (std::size_t r = 0; r < tile_rows; ++r) {
      float* scores = scratch.scores.data() + r * width;
      std::uint16_t* weights = scratch.weights.data() + r * width;
      if (r < rows) {
        const std::size_t visible = causal ? own_first_visible + i0 + r + 1 : own_count;
        inverse_sum[r] = shared.padded == 0
                             ? softmax_numerators(scores, visible, end_padded)
                             : split_softmax_numerators(scores, shared_count, shared.padded, visible, end_padded);
        for (std::size_t j = 0; j < used; j += 32)
          store_bf16_32(weights + j, _mm512_loadu_ps(scores + j), _mm512_loadu_ps(scores + j + 16));
      } else {
        std::fill_n(weights, used, std::uint16_t{0});
      }
    }

    // Output, 16 channels per accumulator, up to 64 channels per pass (d is a multiple of 32).
    for (std::size_t c0 = 0; c0 < d; c0 += 64) {
      const std::size_t count = std::min<std::size_t>(4, (d - c0) / 16);
      zero_accumulators();
      const auto accumulate = [&](const LaidOutKeys& keys, std::size_t columns, std::size_t first_column) {
        for (std::size_t j = 0; j < columns; j += tile_depth) {
          _tile_loadd(0, scratch.weights.data() + first_column + j, static_cast<long>(width * sizeof(std::uint16_t)));
          multiply_accumulate(reinterpret_cast<const std::uint8_t*>(keys.values_pairs + (j / 2) * d + c0),
                              16 * sizeof(std::uint32_t), d * sizeof(std::uint32_t), count);
        }
      };
      accumulate(shared, shared.padded, 0);
      accumulate(own, end_padded, shared.padded);
      store_accumulators(scratch.block_out.data() + c0, d * sizeof(float), count);
    }
    for (std::size_t r = 0; r < rows; ++r) {
      const float* block = scratch.block_out.data() + r * d;
      const __m512 normaliser = _mm512_set1_ps(inverse_sum[r]);
      if (out_bf16 != nullptr) {
        Bf16Bits* out = out_bf16 + (i0 + r) * out_stride;
        for (std::size_t c = 0; c < d; c += 32)
          store_bf16_32(out + c, _mm512_mul_ps(_mm512_loadu_ps(block + c), normaliser),
                        _mm512_mul_ps(_mm512_loadu_ps(block + c + 16), normaliser));
        continue;
      }
      float* out = out_rows + (i0 + r) * out_stride;
      for (std::size_t c = 0; c < d; c += 16)
        _mm512_storeu_ps(out + c, _mm512_mul_ps(_mm512_loadu_ps(block + c), normaliser));
    }
  }
}

}  // namespace

void cached_attention_head_amx_bf16(const CachedAttentionHeadTask& task) {
  const std::size_t d = task.head_dim;
  // A tile's depth must divide head_dim; a block of fewer than 16 rows would mostly multiply
  // padding (a decode step, a short branch): both stay on the fp32 AVX-512 kernel.
  if (d % tile_depth != 0 || task.m < tile_rows) {
    cached_attention_head_avx512(task);
    return;
  }
  assert(!task.causal || task.first_query_position + task.m <= task.n);
  // Keys any row of this task can see; each row's own limit is applied by the softmax mask.
  const std::size_t key_count = task.causal ? task.first_query_position + task.m : task.n;
  const LaidOutKeys own = lay_out_in_scratch(task.keys, task.values, task.kv_stride, key_count, d);
  const TileScope tiles;
  attend(task.q, task.q_stride, task.m, task.scale, d, {}, 0, own, key_count, task.first_query_position, task.causal,
         task.out, nullptr, task.out_stride);
}

void cached_attention_branch_head_amx_bf16(const CachedAttentionBranchHeadTask& task) {
  const std::size_t d = task.head_dim;
  assert(d % tile_depth == 0 && task.prefix_padded % tile_depth == 0 && task.own_padded % tile_depth == 0);
  assert(task.own_count <= task.own_padded && (!task.causal || task.first_row + task.m <= task.own_count));
  // Keys past a row's limit are laid out too (the whole branch, once for all row blocks): the
  // softmax gives them weight exactly 0, so the sums are those of a layout that stops at the limit.
  const TileScope tiles;
  attend(task.q, task.q_stride, task.m, task.scale, d,
         {task.prefix_keys_pairs, task.prefix_values_pairs, task.prefix_padded}, task.prefix_length,
         {task.own_keys_pairs, task.own_values_pairs, task.own_padded}, task.own_count, task.first_row, task.causal,
         task.out, task.out_bf16, task.out_stride);
}

}  // namespace s1::backend::cpu::x86
