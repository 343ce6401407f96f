#include <algorithm>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "backend/cpu/x86/amx_tiles.h"
#include "backend/cpu/x86/attention_amx_tiles.h"
#include "backend/cpu/x86/avx512_math.h"
#include "backend/cpu/x86/x86.h"

namespace s1::backend::cpu::x86 {
namespace {

using namespace amx_attention;

// d and every key range are multiples of 32 here: 2 or 4 accumulators per pass.
constexpr Counts even_counts = Counts::two_or_four;

struct Scratch {
  std::vector<std::uint16_t> queries;       // [16][d] bf16, pre-scaled
  std::vector<std::uint32_t> keys_values;   // [d/2][padded] key pairs, then [padded/2][d] value pairs
  std::vector<float> scores;                // [16][padded]
  std::vector<std::uint16_t> weights;       // [16][padded] bf16 softmax numerators
  std::vector<float> block_out;             // [16][d]
  std::vector<std::uint16_t> key_rows;      // [16][d] 16 keys in bf16
  std::vector<float> rotated;               // [d] one query or key after RoPE
  std::vector<float> widened;               // [d] one bf16 query or key row as fp32
};

Scratch& thread_scratch() {
  thread_local Scratch scratch;
  return scratch;
}

// 16 bf16 values → fp32 (exact).
inline __m512 widen_bf16_16(const std::uint16_t* source) {
  const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(source));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
}

// Lanes l of the 16 keys from j with first ≤ j + l < visible.
inline __mmask16 visible_lanes(std::size_t j, std::size_t first, std::size_t visible) {
  if (j >= visible || j + 16 <= first) return 0;
  __mmask16 lanes = first_lanes(visible - j);
  if (first > j) lanes = static_cast<__mmask16>(lanes & ~first_lanes(first - j));
  return lanes;
}

// One row's softmax numerators over keys [first, visible), written as bf16 weights over [begin, end)
// (zeros elsewhere; begin and end multiples of 32) in the same pass that sums them; returns 1 / Σ.
// The sum is over the fp32 numerators, as softmax_numerators computes it.
inline float softmax_weights_bf16(const float* scores, std::size_t begin, std::size_t first, std::size_t visible,
                                  std::size_t end, std::uint16_t* weights) {
  const __m512 lowest = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 largest = lowest;
  for (std::size_t j = first / 16 * 16; j < visible; j += 16)
    largest = _mm512_max_ps(largest, _mm512_mask_loadu_ps(lowest, visible_lanes(j, first, visible), scores + j));
  const __m512 row_max = _mm512_set1_ps(_mm512_reduce_max_ps(largest));
  __m512 sum = _mm512_setzero_ps();
  for (std::size_t j = begin; j < end; j += 32) {
    const __m512 low = _mm512_maskz_mov_ps(visible_lanes(j, first, visible),
                                           exp_vector(_mm512_sub_ps(_mm512_loadu_ps(scores + j), row_max)));
    const __m512 high = _mm512_maskz_mov_ps(visible_lanes(j + 16, first, visible),
                                            exp_vector(_mm512_sub_ps(_mm512_loadu_ps(scores + j + 16), row_max)));
    sum = _mm512_add_ps(sum, _mm512_add_ps(low, high));
    store_bf16_32(weights + j, low, high);
  }
  return 1.0F / sum_vector(sum);
}

}  // namespace

std::size_t staged_head_size_amx_bf16(std::size_t length, std::size_t head_dim) {
  return (length + tile_depth - 1) / tile_depth * tile_depth * head_dim;
}

namespace {

// The keys [first, last) of one head (bf16 rows `stride` values apart) into the B layout of Q·Kᵀ: row
// p of a tile holds the channel pair (2p, 2p+1) of 16 keys, so 16 keys × 16 pairs is a dword
// transpose (d a multiple of 32: whole blocks of 16 pairs). Only the range's lanes of a block are
// read and written, and with owns_end (last == length) the padding keys up to `padded` as zeros: a
// zero weight times a stale NaN is still NaN.
void lay_out_keys(const Bf16Bits* k, std::size_t stride, std::size_t length, std::size_t padded, std::size_t d,
                  std::size_t first, std::size_t last, std::uint32_t* keys_pairs) {
  const bool owns_end = first < last && last == length;
  for (std::size_t j0 = first / 16 * 16; j0 < last; j0 += 16) {
    const std::size_t begin = std::max(first, j0) - j0;
    const std::size_t end = std::min(last, j0 + 16) - j0;
    const std::size_t stored_end = owns_end && j0 + 16 >= length ? 16 : end;
    const auto lanes = static_cast<__mmask16>(first_lanes(stored_end) & ~first_lanes(begin));
    for (std::size_t c = 0; c < d; c += 32)
      transpose_dwords_16x16(reinterpret_cast<const std::uint8_t*>(k + j0 * stride + c), stride * sizeof(Bf16Bits),
                             begin, end, keys_pairs + (c / 2) * padded + j0, padded, lanes);
  }
  const std::size_t laid_out_keys = (length + 15) / 16 * 16;
  for (std::size_t p = 0; owns_end && laid_out_keys < padded && p < d / 2; ++p)
    std::fill_n(keys_pairs + p * padded + laid_out_keys, padded - laid_out_keys, 0U);
}

// The values [first, last) of one head into the B layout of P·V: row q of a tile holds keys (2q,
// 2q+1) of 16 channels interleaved, even words key 2q and odd words key 2q + 1, so a pair split
// between two ranges is written by halves; with owns_end, the padding as zeros.
void lay_out_values(const Bf16Bits* v, std::size_t stride, std::size_t length, std::size_t padded, std::size_t d,
                    std::size_t first, std::size_t last, std::uint32_t* values_pairs) {
  const bool owns_end = first < last && last == length;
  const __m512i interleave = _mm512_loadu_si512(interleave_pairs.data());
  constexpr __mmask32 even_words = 0x55555555U;
  constexpr __mmask32 odd_words = 0xAAAAAAAAU;
  for (std::size_t j = first / 2 * 2; j < last; j += 2) {
    const bool has_first = j >= first;
    const bool has_second = j + 1 < last;
    const __mmask32 words =
        (has_first ? even_words : 0U) | (has_second || (owns_end && j + 1 == length) ? odd_words : 0U);
    const Bf16Bits* v0 = v + j * stride;
    const Bf16Bits* v1 = v0 + stride;
    for (std::size_t c = 0; c < d; c += 16) {
      const __m256i low =
          has_first ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v0 + c)) : _mm256_setzero_si256();
      const __m256i high =
          has_second ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v1 + c)) : _mm256_setzero_si256();
      const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
      _mm512_mask_storeu_epi16(values_pairs + (j / 2) * d + c, words, _mm512_permutexvar_epi16(interleave, both));
    }
  }
  if (owns_end) std::fill(values_pairs + (length + 1) / 2 * d, values_pairs + padded / 2 * d, 0U);
}

// Keys and values that are not bf16 rows as they stand (fp32, or keys rotated by a fused RoPE) into
// the same layouts: keys rounded to 16 bf16 rows at a time (head_row gives row t of q or k as fp32),
// then transposed; scattering pair by pair wrote 32 cache lines per key.
template <class HeadRow>
void lay_out_converted_keys_values(const AttentionHeadTask& task, std::size_t length, std::size_t padded,
                                   std::uint32_t* laid_out, Scratch& scratch, HeadRow&& head_row) {
  const std::size_t d = task.head_dim;
  scratch.key_rows.resize(16 * d);
  for (std::size_t j0 = 0; j0 < length; j0 += 16) {
    const std::size_t valid = std::min<std::size_t>(16, length - j0);
    for (std::size_t r = 0; r < valid; ++r) {
      const float* k = head_row(task.k, task.k_bf16, j0 + r);
      for (std::size_t c = 0; c < d; c += 32)
        store_bf16_32(scratch.key_rows.data() + r * d + c, _mm512_loadu_ps(k + c), _mm512_loadu_ps(k + c + 16));
    }
    for (std::size_t c = 0; c < d; c += 32)
      transpose_dwords_16x16(reinterpret_cast<const std::uint8_t*>(scratch.key_rows.data() + c),
                             d * sizeof(std::uint16_t), 0, valid, laid_out + (c / 2) * padded + j0, padded);
  }
  const std::size_t laid_out_keys = (length + 15) / 16 * 16;
  for (std::size_t p = 0; laid_out_keys < padded && p < d / 2; ++p)
    std::fill_n(laid_out + p * padded + laid_out_keys, padded - laid_out_keys, 0U);
  std::uint32_t* values_pairs = laid_out + d / 2 * padded;
  if (task.v_bf16 != nullptr) {
    lay_out_values(task.v_bf16, task.qkv_stride, length, padded, d, 0, length, values_pairs);
    return;
  }
  lay_out_fp32_values(task.v, task.qkv_stride, length, padded, d, values_pairs);
}

}  // namespace

void stage_keys_values_amx_bf16(const Bf16Bits* k, const Bf16Bits* v, std::size_t stride, std::size_t length,
                                std::size_t head_dim, std::size_t first, std::size_t last, std::uint32_t* staged) {
  assert(head_dim % tile_depth == 0 && first <= last && last <= length);
  const std::size_t padded = (length + tile_depth - 1) / tile_depth * tile_depth;
  lay_out_keys(k, stride, length, padded, head_dim, first, last, staged);
  lay_out_values(v, stride, length, padded, head_dim, first, last, staged + head_dim / 2 * padded);
}

void attention_head_amx_bf16(const AttentionHeadTask& task) {
  const std::size_t d = task.head_dim;
  if (d % tile_depth != 0) {
    attention_head_avx512(task);
    return;
  }
  assert(task.length <= task.seq);
  const std::size_t length = task.length;
  const std::size_t padded = (length + tile_depth - 1) / tile_depth * tile_depth;
  Scratch& scratch = thread_scratch();
  scratch.queries.resize(tile_rows * d);
  scratch.scores.resize(tile_rows * padded);
  scratch.weights.resize(tile_rows * padded);
  scratch.block_out.resize(tile_rows * d);
  // Row t of q or k as fp32 (widened from bf16 rows), rotated into scratch.rotated when RoPE is fused.
  scratch.rotated.resize(d);
  scratch.widened.resize(d);
  const auto head_row = [&](const float* x, const std::uint16_t* x_bf16, std::size_t t) {
    const float* row = x + t * task.qkv_stride;
    if (x_bf16 != nullptr) {
      for (std::size_t c = 0; c < d; c += 16)
        _mm512_storeu_ps(scratch.widened.data() + c, widen_bf16_16(x_bf16 + t * task.qkv_stride + c));
      row = scratch.widened.data();
    }
    if (task.rope_cosines == nullptr) return row;
    rotate_half_row(row, d, task.rope_cosines + t * (d / 2), task.rope_sines + t * (d / 2), scratch.rotated.data());
    return static_cast<const float*>(scratch.rotated.data());
  };

  // Keys and values in the B layouts, [d/2][padded] key pairs then [padded/2][d] value pairs: staged by
  // the caller, or laid out here.
  const std::uint32_t* keys_pairs = task.staged_keys_values;
  assert(keys_pairs == nullptr || task.q_bf16 != nullptr);
  if (keys_pairs == nullptr) {
    scratch.keys_values.resize(staged_head_size_amx_bf16(length, d));
    std::uint32_t* laid_out = scratch.keys_values.data();
    if (task.k_bf16 != nullptr && task.v_bf16 != nullptr && task.rope_cosines == nullptr) {
      stage_keys_values_amx_bf16(task.k_bf16, task.v_bf16, task.qkv_stride, length, d, 0, length, laid_out);
    } else {
      lay_out_converted_keys_values(task, length, padded, laid_out, scratch, head_row);
    }
    keys_pairs = laid_out;
  }
  const std::uint32_t* values_pairs = keys_pairs + d / 2 * padded;

  const TileScope tiles;
  const __m512 scale = _mm512_set1_ps(task.scale);
  const std::size_t query_stop = std::min(task.query_stop(), length);
  for (std::size_t i0 = task.query_begin; i0 < query_stop; i0 += tile_rows) {
    const std::size_t rows = std::min(tile_rows, query_stop - i0);
    for (std::size_t r = 0; r < tile_rows; ++r) {
      std::uint16_t* q_out = scratch.queries.data() + r * d;
      if (r >= rows) {
        std::memset(q_out, 0, d * sizeof(std::uint16_t));
        continue;
      }
      const float* q = head_row(task.q, task.q_bf16, i0 + r);
      for (std::size_t c = 0; c < d; c += 32)
        store_bf16_32(q_out + c, _mm512_mul_ps(_mm512_loadu_ps(q + c), scale),
                      _mm512_mul_ps(_mm512_loadu_ps(q + c + 16), scale));
    }
    // Keys this block can see, [begin, end), widened to whole tiles: a sliding window (ModernBERT's
    // local layers) skips the tiles wholly outside it and masks the rest per row below.
    std::size_t end = task.causal ? std::min(length, i0 + rows) : length;
    std::size_t begin = 0;
    if (task.window != 0) {
      end = std::min(end, i0 + rows + task.window);
      begin = (i0 > task.window ? i0 - task.window : 0) / tile_depth * tile_depth;
    }
    const std::size_t end_padded = (end + tile_depth - 1) / tile_depth * tile_depth;

    // Scores, 16 keys per accumulator, up to 64 keys per pass (the range is a multiple of 32). With
    // head_dim 64 (ModernBERT, BERT-base) both query tiles stay loaded (tiles 0 and 3) for the whole
    // pass: reloading tile 0 made each load wait for the products still reading it.
    const auto query_stride = static_cast<long>(d * sizeof(std::uint16_t));
    const bool queries_resident = d == 2 * tile_depth;
    if (queries_resident) {
      _tile_loadd(0, scratch.queries.data(), query_stride);
      _tile_loadd(3, scratch.queries.data() + tile_depth, query_stride);
    }
    for (std::size_t j0 = begin; j0 < end_padded; j0 += 64) {
      const std::size_t count = std::min<std::size_t>(4, (end_padded - j0) / 16);
      const auto keys = [&](std::size_t c) {
        return reinterpret_cast<const std::uint8_t*>(keys_pairs + (c / 2) * padded + j0);
      };
      zero_accumulators();
      if (queries_resident) {
        multiply_accumulate<even_counts>(keys(0), 16 * sizeof(std::uint32_t), padded * sizeof(std::uint32_t), count);
        multiply_accumulate_a3<even_counts>(keys(tile_depth), 16 * sizeof(std::uint32_t),
                                            padded * sizeof(std::uint32_t), count);
      } else {
        for (std::size_t c = 0; c < d; c += tile_depth) {
          _tile_loadd(0, scratch.queries.data() + c, query_stride);
          multiply_accumulate<even_counts>(keys(c), 16 * sizeof(std::uint32_t), padded * sizeof(std::uint32_t), count);
        }
      }
      store_accumulators<even_counts>(scratch.scores.data() + j0, padded * sizeof(float), count);
    }

    float inverse_sum[tile_rows] = {};
    for (std::size_t r = 0; r < tile_rows; ++r) {
      const float* scores = scratch.scores.data() + r * padded;
      std::uint16_t* weights = scratch.weights.data() + r * padded;
      if (r < rows) {
        const std::size_t i = i0 + r;
        const auto [first, visible] = task.visible_keys(i);
        inverse_sum[r] = softmax_weights_bf16(scores, begin, first, visible, end_padded, weights);
      } else {
        std::fill(weights + begin, weights + end_padded, std::uint16_t{0});
      }
    }

    // Output, 16 channels per accumulator, up to 64 channels per pass (d is a multiple of 32).
    for (std::size_t c0 = 0; c0 < d; c0 += 64) {
      const std::size_t count = std::min<std::size_t>(4, (d - c0) / 16);
      zero_accumulators();
      for (std::size_t j = begin; j < end_padded; j += tile_depth) {
        _tile_loadd(0, scratch.weights.data() + j, static_cast<long>(padded * sizeof(std::uint16_t)));
        multiply_accumulate<even_counts>(reinterpret_cast<const std::uint8_t*>(values_pairs + (j / 2) * d + c0),
                                         16 * sizeof(std::uint32_t), d * sizeof(std::uint32_t), count);
      }
      store_accumulators<even_counts>(scratch.block_out.data() + c0, d * sizeof(float), count);
    }
    for (std::size_t r = 0; r < rows; ++r) {
      const float* block = scratch.block_out.data() + r * d;
      const __m512 normaliser = _mm512_set1_ps(inverse_sum[r]);
      if (task.out_bf16 != nullptr) {
        std::uint16_t* out = task.out_bf16 + (i0 + r) * task.out_stride;
        for (std::size_t c = 0; c < d; c += 32)
          store_bf16_32(out + c, _mm512_mul_ps(_mm512_loadu_ps(block + c), normaliser),
                        _mm512_mul_ps(_mm512_loadu_ps(block + c + 16), normaliser));
        continue;
      }
      float* out = task.out + (i0 + r) * task.out_stride;
      for (std::size_t c = 0; c < d; c += 16)
        _mm512_storeu_ps(out + c, _mm512_mul_ps(_mm512_loadu_ps(block + c), normaliser));
    }
  }
  for (std::size_t i = std::max(length, task.query_begin); i < task.query_stop(); ++i) {
    if (task.out_bf16 != nullptr) {
      std::fill_n(task.out_bf16 + i * task.out_stride, d, std::uint16_t{0});
    } else {
      std::fill_n(task.out + i * task.out_stride, d, 0.0F);
    }
  }
}

}  // namespace s1::backend::cpu::x86
