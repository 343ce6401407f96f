#pragma once
// The fp32 AVX-512 blocking shared by attention_avx512.cpp and cached_attention_avx512.cpp (include
// only from files built with the AVX-512 flags): eight query rows share every K and V load: with
// 8 rows × 2 vectors there are 16 independent FMA chains, enough to hide FMA latency, and 10 loads
// per 16 FMAs keeps the load ports below the FMA ports. Keys are transposed once per head, so a
// score block is plain FMAs.

#include <immintrin.h>

#include <cstddef>

#include "backend/cpu/x86/avx512_math.h"

namespace s1::backend::cpu::x86::avx512_attention {

inline constexpr std::size_t block_rows = 8;

// scores[r][j0 .. j0+16·vectors) = Σ_c q[r][c] · kT[c][j0 ..]
template <std::size_t vectors>
inline void score_block(const float* queries, const float* keys_transposed, std::size_t padded, std::size_t d,
                        std::size_t j0, float* scores) {
  __m512 acc[block_rows][vectors];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < block_rows; ++r)
#pragma GCC unroll 2
    for (std::size_t v = 0; v < vectors; ++v) acc[r][v] = _mm512_setzero_ps();
  for (std::size_t c = 0; c < d; ++c) {
    __m512 k[vectors];
#pragma GCC unroll 2
    for (std::size_t v = 0; v < vectors; ++v) k[v] = _mm512_loadu_ps(keys_transposed + c * padded + j0 + 16 * v);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < block_rows; ++r) {
      const __m512 q = _mm512_set1_ps(queries[r * d + c]);
#pragma GCC unroll 2
      for (std::size_t v = 0; v < vectors; ++v) acc[r][v] = _mm512_fmadd_ps(q, k[v], acc[r][v]);
    }
  }
#pragma GCC unroll 8
  for (std::size_t r = 0; r < block_rows; ++r)
#pragma GCC unroll 2
    for (std::size_t v = 0; v < vectors; ++v) _mm512_storeu_ps(scores + r * padded + j0 + 16 * v, acc[r][v]);
}

// Scores of keys [begin, end_padded) (multiples of 16): two vectors per block while they last.
inline void score_blocks(const float* queries, const float* keys_transposed, std::size_t padded, std::size_t d,
                         std::size_t begin, std::size_t end_padded, float* scores) {
  std::size_t j0 = begin;
  for (; j0 + 32 <= end_padded; j0 += 32) score_block<2>(queries, keys_transposed, padded, d, j0, scores);
  if (j0 < end_padded) score_block<1>(queries, keys_transposed, padded, d, j0, scores);
}

// out[r][c0 .. c0+32) = inverse_sum[r] · Σ_{begin ≤ j < end} p[r][j] · v[j][c0 ..], lanes beyond d masked;
// rows whose out_rows entry is null are skipped.
inline void weighted_values(const float* scores, std::size_t padded, std::size_t begin, std::size_t end,
                            const float* values, std::size_t stride, std::size_t d, std::size_t c0,
                            const float* inverse_sum, float* const* out_rows) {
  const __mmask16 low = first_lanes(d - c0);
  const __mmask16 high = d > c0 + 16 ? first_lanes(d - c0 - 16) : static_cast<__mmask16>(0);
  __m512 acc[block_rows][2];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < block_rows; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (std::size_t j = begin; j < end; ++j) {
    const __m512 v0 = _mm512_maskz_loadu_ps(low, values + j * stride + c0);
    const __m512 v1 = _mm512_maskz_loadu_ps(high, values + j * stride + c0 + 16);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < block_rows; ++r) {
      const __m512 p = _mm512_set1_ps(scores[r * padded + j]);
      acc[r][0] = _mm512_fmadd_ps(p, v0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(p, v1, acc[r][1]);
    }
  }
  for (std::size_t r = 0; r < block_rows; ++r) {
    if (out_rows[r] == nullptr) continue;
    const __m512 scale = _mm512_set1_ps(inverse_sum[r]);
    _mm512_mask_storeu_ps(out_rows[r] + c0, low, _mm512_mul_ps(acc[r][0], scale));
    _mm512_mask_storeu_ps(out_rows[r] + c0 + 16, high, _mm512_mul_ps(acc[r][1], scale));
  }
}

}  // namespace s1::backend::cpu::x86::avx512_attention
