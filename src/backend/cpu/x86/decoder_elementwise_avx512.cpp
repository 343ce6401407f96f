#include <cassert>
#include <cmath>

#include "backend/cpu/x86/avx512_math.h"
#include "backend/cpu/x86/decoder.h"

namespace s1::backend::cpu::x86 {

void rms_norm_avx512(std::span<const float> x, std::span<const float> weight, float eps, std::span<float> y) {
  const std::size_t width = weight.size();
  assert(width > 0 && x.size() % width == 0 && y.size() == x.size());
  for (std::size_t r = 0; r < x.size() / width; ++r) {
    const float* row = x.data() + r * width;
    float* out = y.data() + r * width;
    // Sixteen lanes of fp32 partial sums, as torch's vectorised fp32 mean(x²) does.
    __m512 squares = _mm512_setzero_ps();
    for (std::size_t i = 0; i < width; i += 16) {
      const __m512 v = _mm512_maskz_loadu_ps(first_lanes(width - i), row + i);
      squares = _mm512_fmadd_ps(v, v, squares);
    }
    const float mean = sum_vector(squares) / static_cast<float>(width);
    const __m512 inverse_rms = _mm512_set1_ps(1.0F / std::sqrt(mean + eps));
    // (x · 1/rms) · weight, rounded in Transformers' order.
    for (std::size_t i = 0; i < width; i += 16) {
      const __mmask16 lanes = first_lanes(width - i);
      const __m512 v = _mm512_maskz_loadu_ps(lanes, row + i);
      const __m512 w = _mm512_maskz_loadu_ps(lanes, weight.data() + i);
      _mm512_mask_storeu_ps(out + i, lanes, _mm512_mul_ps(_mm512_mul_ps(v, inverse_rms), w));
    }
  }
}

void silu_mul_avx512(std::span<const float> gate, std::span<const float> up, std::span<float> y) {
  assert(up.size() == gate.size() && y.size() == gate.size());
  const __m512 one = _mm512_set1_ps(1.0F);
  for (std::size_t i = 0; i < gate.size(); i += 16) {
    const __mmask16 lanes = first_lanes(gate.size() - i);
    const __m512 g = _mm512_maskz_loadu_ps(lanes, gate.data() + i);
    const __m512 u = _mm512_maskz_loadu_ps(lanes, up.data() + i);
    // silu(g) = g / (1 + e^(−g)); exp_vector clamps, so very negative g gives g / ~3e38 ≈ 0, not NaN.
    const __m512 silu = _mm512_div_ps(g, _mm512_add_ps(one, exp_vector(_mm512_sub_ps(_mm512_setzero_ps(), g))));
    _mm512_mask_storeu_ps(y.data() + i, lanes, _mm512_mul_ps(silu, u));
  }
}

}  // namespace s1::backend::cpu::x86
