#pragma once

// Vector math shared by the AVX-512 variants; include only from files built with -mavx512f.

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <limits>

namespace s1::backend::cpu::x86 {

// e^x with Cephes' expf polynomial (about 1 ulp), 2^n applied with vscalefps. Inputs below -87.3
// are clamped, so the result stays a normal float (denormals are slow, and every caller subtracts
// a row maximum first, so such terms are negligible anyway).
inline __m512 exp_vector(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3F)), _mm512_set1_ps(88.7F));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341F)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375F), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4F), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4F);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3F));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3F));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2F));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1F));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1F));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0F)));
  return _mm512_scalef_ps(p, n);
}

// Exact-form GELU, 0.5·x·(1 + erf(x/√2)), with erf from Abramowitz & Stegun 7.1.26 (absolute error
// below 1.5e-7, the formula oneDNN's gelu_erf uses). For x < 0 it evaluates 1 + erf = erfc(|z|)
// directly, so there is no cancellation in the negative tail.
inline __m512 gelu_vector(__m512 x) {
  const __m512 z = _mm512_mul_ps(_mm512_abs_ps(x), _mm512_set1_ps(0.70710678118654752F));
  const __m512 t =
      _mm512_div_ps(_mm512_set1_ps(1.0F), _mm512_fmadd_ps(z, _mm512_set1_ps(0.3275911F), _mm512_set1_ps(1.0F)));
  __m512 p = _mm512_set1_ps(1.061405429F);
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.453152027F));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.421413741F));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.284496736F));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.254829592F));
  const __m512 complement =
      _mm512_mul_ps(_mm512_mul_ps(p, t), exp_vector(_mm512_mul_ps(z, _mm512_sub_ps(_mm512_setzero_ps(), z))));
  const __mmask16 negative = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  const __m512 one_plus_erf =
      _mm512_mask_blend_ps(negative, _mm512_sub_ps(_mm512_set1_ps(2.0F), complement), complement);
  return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5F), x), one_plus_erf);
}

// Rotate-half RoPE of one head row x[0, d) into out (not x), with h = d/2:
// out[c] = x[c]·cos[c] − x[c+h]·sin[c], out[c+h] = x[c+h]·cos[c] + x[c]·sin[c], each product rounded
// to fp32 before the sum, as apply_rope computes it.
inline void rotate_half_row(const float* x, std::size_t d, const float* cosines, const float* sines, float* out) {
  const std::size_t half = d / 2;
  std::size_t c = 0;
  for (; c + 16 <= half; c += 16) {
    const __m512 first = _mm512_loadu_ps(x + c);
    const __m512 second = _mm512_loadu_ps(x + half + c);
    const __m512 cosine = _mm512_loadu_ps(cosines + c);
    const __m512 sine = _mm512_loadu_ps(sines + c);
    _mm512_storeu_ps(out + c, _mm512_sub_ps(_mm512_mul_ps(first, cosine), _mm512_mul_ps(second, sine)));
    _mm512_storeu_ps(out + half + c, _mm512_add_ps(_mm512_mul_ps(second, cosine), _mm512_mul_ps(first, sine)));
  }
  for (; c < half; ++c) {
    out[c] = x[c] * cosines[c] - x[half + c] * sines[c];
    out[half + c] = x[half + c] * cosines[c] + x[c] * sines[c];
  }
}

// Writes dword l of row p, for 16 rows of 16 dwords (rows source_stride bytes apart, only rows
// [first_row, end_row) read, the others taken as zeros), to destination[p·destination_stride + l] for
// the lanes l in `lanes`: a 16×16 transpose in registers. The attention kernels' key layouts (fp32 keys
// as they are, bf16 keys as channel pairs), where one gather per output row, or one scalar store per
// value, was the kernel's hottest spot; a row range and lanes let a thread lay out only its own keys.
inline void transpose_dwords_16x16(const std::uint8_t* source, std::size_t source_stride, std::size_t first_row,
                                   std::size_t end_row, std::uint32_t* destination, std::size_t destination_stride,
                                   __mmask16 lanes = 0xFFFF) {
  // All lanes kept: the same instructions as the unmasked forms, whose GCC 12 definitions pass
  // _mm512_undefined_epi32() and fail -Werror=uninitialized once inlined (GCC bug 105593).
  constexpr __mmask16 every_dword = 0xFFFF;
  constexpr __mmask8 every_qword = 0xFF;
  __m512i row[16];
  for (std::size_t l = 0; l < 16; ++l)
    row[l] = l >= first_row && l < end_row ? _mm512_loadu_si512(source + l * source_stride) : _mm512_setzero_si512();
  // Within each 128-bit lane k: pairs of rows, then quadruples, interleaved, so that
  // quad[4g + e] lane k holds dword 4k + e of rows 4g..4g+3.
  __m512i pair[16];
  for (std::size_t r = 0; r < 16; r += 2) {
    pair[r] = _mm512_maskz_unpacklo_epi32(every_dword, row[r], row[r + 1]);
    pair[r + 1] = _mm512_maskz_unpackhi_epi32(every_dword, row[r], row[r + 1]);
  }
  __m512i quad[16];
  for (std::size_t g = 0; g < 16; g += 4) {
    quad[g] = _mm512_maskz_unpacklo_epi64(every_qword, pair[g], pair[g + 2]);
    quad[g + 1] = _mm512_maskz_unpackhi_epi64(every_qword, pair[g], pair[g + 2]);
    quad[g + 2] = _mm512_maskz_unpacklo_epi64(every_qword, pair[g + 1], pair[g + 3]);
    quad[g + 3] = _mm512_maskz_unpackhi_epi64(every_qword, pair[g + 1], pair[g + 3]);
  }
  // Output row 4k + e gathers lane k of quad[e], quad[4 + e], quad[8 + e], quad[12 + e].
  for (std::size_t e = 0; e < 4; ++e) {
    const __m512i low01 = _mm512_maskz_shuffle_i32x4(every_dword, quad[e], quad[4 + e], 0x44);
    const __m512i low23 = _mm512_maskz_shuffle_i32x4(every_dword, quad[e], quad[4 + e], 0xEE);
    const __m512i high01 = _mm512_maskz_shuffle_i32x4(every_dword, quad[8 + e], quad[12 + e], 0x44);
    const __m512i high23 = _mm512_maskz_shuffle_i32x4(every_dword, quad[8 + e], quad[12 + e], 0xEE);
    std::uint32_t* out = destination + e * destination_stride;
    _mm512_mask_storeu_epi32(out, lanes, _mm512_maskz_shuffle_i32x4(every_dword, low01, high01, 0x88));
    _mm512_mask_storeu_epi32(out + 4 * destination_stride, lanes,
                             _mm512_maskz_shuffle_i32x4(every_dword, low01, high01, 0xDD));
    _mm512_mask_storeu_epi32(out + 8 * destination_stride, lanes,
                             _mm512_maskz_shuffle_i32x4(every_dword, low23, high23, 0x88));
    _mm512_mask_storeu_epi32(out + 12 * destination_stride, lanes,
                             _mm512_maskz_shuffle_i32x4(every_dword, low23, high23, 0xDD));
  }
}

// _mm512_reduce_add_ps / _mm512_reduce_max_ps in GCC's order of operations, with masked extracts
// of the halves: GCC 12's unmasked forms (and _mm512_castps512_ps256) pass _mm256_undefined_pd() and fail
// -Werror=uninitialized once inlined into some callers (GCC bug 105593).
template <class Op256, class Op128>
inline float reduce_vector(__m512 v, Op256 op256, Op128 op128) {
  const __m512d both = _mm512_castps_pd(v);
  const __m256 half = op256(_mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xFF, both, 1)),
                            _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xFF, both, 0)));
  const __m128 quarter = op128(_mm256_extractf128_ps(half, 1), _mm256_castps256_ps128(half));
  const __m128 eighth = op128(quarter, _mm_shuffle_ps(quarter, quarter, _MM_SHUFFLE(1, 0, 3, 2)));
  return _mm_cvtss_f32(op128(eighth, _mm_shuffle_ps(eighth, eighth, _MM_SHUFFLE(0, 0, 0, 1))));
}

inline float sum_vector(__m512 v) {
  return reduce_vector(
      v, [](__m256 a, __m256 b) { return _mm256_add_ps(a, b); }, [](__m128 a, __m128 b) { return _mm_add_ps(a, b); });
}

inline float max_vector(__m512 v) {
  return reduce_vector(
      v, [](__m256 a, __m256 b) { return _mm256_max_ps(a, b); }, [](__m128 a, __m128 b) { return _mm_max_ps(a, b); });
}

// Mask selecting the first `count` (≤ 16) lanes.
inline __mmask16 first_lanes(std::size_t count) {
  return count >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1U << count) - 1U);
}

// Softmax numerators over scores[0, visible), zeros in [visible, end); returns 1 / Σ.
inline float softmax_numerators(float* scores, std::size_t visible, std::size_t end) {
  const __m512 lowest = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 largest = lowest;
  for (std::size_t j = 0; j < visible; j += 16)
    largest = _mm512_max_ps(largest, _mm512_mask_loadu_ps(lowest, first_lanes(visible - j), scores + j));
  const __m512 row_max = _mm512_set1_ps(_mm512_reduce_max_ps(largest));
  __m512 sum = _mm512_setzero_ps();
  for (std::size_t j = 0; j < end; j += 16) {
    const __mmask16 valid = j < visible ? first_lanes(visible - j) : static_cast<__mmask16>(0);
    const __m512 e = _mm512_maskz_mov_ps(valid, exp_vector(_mm512_sub_ps(_mm512_loadu_ps(scores + j), row_max)));
    _mm512_storeu_ps(scores + j, e);
    sum = _mm512_add_ps(sum, e);
  }
  return 1.0F / sum_vector(sum);
}

}  // namespace s1::backend::cpu::x86
