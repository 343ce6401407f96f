#pragma once

// Vector math shared by the AVX2 variants (the same formulas as avx512_math.h, eight lanes); include
// only from files built with -mavx2 -mfma.

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <limits>

namespace s1::backend::cpu::x86::avx2 {

// Mask of the first `count` (≤ 8) lanes, for _mm256_maskload_ps/_mm256_maskstore_ps (AVX2 has no
// mask registers: a lane takes part when its sign bit is set).
inline __m256i first_lanes(std::size_t count) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const int n = count >= 8 ? 8 : static_cast<int>(count);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), lane);
}

inline __m256 load(const float* from, __m256i lanes) { return _mm256_maskload_ps(from, lanes); }
inline void store(float* to, __m256i lanes, __m256 v) { _mm256_maskstore_ps(to, lanes, v); }

// e^x, Cephes' expf polynomial as exp_vector in avx512_math.h. Without vscalefps, 2^n is built in the
// exponent bits, so the upper clamp is 88.3 (n ≤ 127, e^88.3 ≈ 2.2e38 stays finite); the lower, -87.3,
// keeps 2^n a normal float.
inline __m256 exp_vector(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3F)), _mm256_set1_ps(88.3F));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341F)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375F), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4F), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4F);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3F));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3F));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2F));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1F));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1F));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0F)));
  const __m256i exponent = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(exponent));
}

// Exact-form GELU with Abramowitz & Stegun 7.1.26 erf, as gelu_vector in avx512_math.h.
inline __m256 gelu_vector(__m256 x) {
  const __m256 magnitude = _mm256_andnot_ps(_mm256_set1_ps(-0.0F), x);
  const __m256 z = _mm256_mul_ps(magnitude, _mm256_set1_ps(0.70710678118654752F));
  const __m256 t =
      _mm256_div_ps(_mm256_set1_ps(1.0F), _mm256_fmadd_ps(z, _mm256_set1_ps(0.3275911F), _mm256_set1_ps(1.0F)));
  __m256 p = _mm256_set1_ps(1.061405429F);
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.453152027F));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.421413741F));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.284496736F));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.254829592F));
  const __m256 complement =
      _mm256_mul_ps(_mm256_mul_ps(p, t), exp_vector(_mm256_mul_ps(z, _mm256_sub_ps(_mm256_setzero_ps(), z))));
  const __m256 negative = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
  const __m256 one_plus_erf = _mm256_blendv_ps(_mm256_sub_ps(_mm256_set1_ps(2.0F), complement), complement, negative);
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5F), x), one_plus_erf);
}

inline float sum_vector(__m256 v) {
  const __m128 quarter = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
  const __m128 eighth = _mm_add_ps(quarter, _mm_movehl_ps(quarter, quarter));
  return _mm_cvtss_f32(_mm_add_ss(eighth, _mm_movehdup_ps(eighth)));
}

inline float max_vector(__m256 v) {
  const __m128 quarter = _mm_max_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
  const __m128 eighth = _mm_max_ps(quarter, _mm_movehl_ps(quarter, quarter));
  return _mm_cvtss_f32(_mm_max_ss(eighth, _mm_movehdup_ps(eighth)));
}

// Softmax numerators over scores[0, visible), zeros in [visible, end) (end a multiple of 8); returns 1 / Σ.
inline float softmax_numerators(float* scores, std::size_t visible, std::size_t end) {
  const __m256 lowest = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 largest = lowest;
  for (std::size_t j = 0; j < visible; j += 8) {
    const __m256i lanes = first_lanes(visible - j);
    largest = _mm256_max_ps(largest, _mm256_blendv_ps(lowest, load(scores + j, lanes), _mm256_castsi256_ps(lanes)));
  }
  const __m256 row_max = _mm256_set1_ps(max_vector(largest));
  __m256 sum = _mm256_setzero_ps();
  for (std::size_t j = 0; j < end; j += 8) {
    const __m256 valid = _mm256_castsi256_ps(j < visible ? first_lanes(visible - j) : _mm256_setzero_si256());
    const __m256 e = _mm256_and_ps(valid, exp_vector(_mm256_sub_ps(_mm256_loadu_ps(scores + j), row_max)));
    _mm256_storeu_ps(scores + j, e);
    sum = _mm256_add_ps(sum, e);
  }
  return 1.0F / sum_vector(sum);
}

}  // namespace s1::backend::cpu::x86::avx2
