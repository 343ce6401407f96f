#include <cassert>
#include <limits>

#include "backend/cpu/x86/avx512_math.h"
#include "backend/cpu/x86/x86.h"

namespace s1::backend::cpu::x86 {

void gelu_avx512(std::span<const float> x, std::span<float> y) {
  assert(y.size() == x.size());
  std::size_t i = 0;
  for (; i + 16 <= x.size(); i += 16)
    _mm512_storeu_ps(y.data() + i, gelu_vector(_mm512_loadu_ps(x.data() + i)));
  if (i < x.size()) {
    const __mmask16 m = first_lanes(x.size() - i);
    _mm512_mask_storeu_ps(y.data() + i, m, gelu_vector(_mm512_maskz_loadu_ps(m, x.data() + i)));
  }
}

void gelu_mul_avx512(std::span<const float> x, std::span<const float> gate, std::span<float> y) {
  assert(gate.size() == x.size() && y.size() == x.size());
  for (std::size_t i = 0; i < x.size(); i += 16) {
    const __mmask16 m = first_lanes(x.size() - i);
    const __m512 activated = gelu_vector(_mm512_maskz_loadu_ps(m, x.data() + i));
    _mm512_mask_storeu_ps(y.data() + i, m, _mm512_mul_ps(activated, _mm512_maskz_loadu_ps(m, gate.data() + i)));
  }
}

namespace {

// 16 bf16 values widened to fp32 (exact: bf16 is an fp32's upper half); lanes outside m read as 0.
__m512 load_bf16(__mmask16 m, const Bf16Bits* from) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, from)), 16));
}

}  // namespace

void gelu_mul_bf16_avx512(std::span<const Bf16Bits> x, std::span<const Bf16Bits> gate, std::span<float> y) {
  assert(gate.size() == x.size() && y.size() == x.size());
  for (std::size_t i = 0; i < x.size(); i += 16) {
    const __mmask16 m = first_lanes(x.size() - i);
    const __m512 activated = gelu_vector(load_bf16(m, x.data() + i));
    _mm512_mask_storeu_ps(y.data() + i, m, _mm512_mul_ps(activated, load_bf16(m, gate.data() + i)));
  }
}

void softmax_avx512(std::span<const float> x, std::size_t columns, std::span<float> y) {
  assert(columns > 0 && x.size() % columns == 0 && y.size() == x.size());
  const __m512 lowest = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (std::size_t r = 0; r < x.size() / columns; ++r) {
    const float* in = x.data() + r * columns;
    float* out = y.data() + r * columns;
    __m512 largest = lowest;
    for (std::size_t i = 0; i < columns; i += 16) {
      const __mmask16 m = first_lanes(columns - i);
      largest = _mm512_max_ps(largest, _mm512_mask_loadu_ps(lowest, m, in + i));
    }
    const __m512 row_max = _mm512_set1_ps(_mm512_reduce_max_ps(largest));
    __m512 sum = _mm512_setzero_ps();
    for (std::size_t i = 0; i < columns; i += 16) {
      const __mmask16 m = first_lanes(columns - i);
      const __m512 e =
          _mm512_maskz_mov_ps(m, exp_vector(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, in + i), row_max)));
      _mm512_mask_storeu_ps(out + i, m, e);
      sum = _mm512_add_ps(sum, e);
    }
    const __m512 inverse_sum = _mm512_set1_ps(1.0F / sum_vector(sum));
    for (std::size_t i = 0; i < columns; i += 16) {
      const __mmask16 m = first_lanes(columns - i);
      _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, out + i), inverse_sum));
    }
  }
}

}  // namespace s1::backend::cpu::x86
