#include <cassert>
#include <cmath>

#include "backend/cpu/x86/avx512_math.h"
#include "backend/cpu/x86/x86.h"

namespace s1::backend::cpu::x86 {

void layer_norm_avx512(std::span<const float> x, std::span<const float> residual,
                       std::span<const float> gamma, std::span<const float> beta, float eps,
                       std::span<float> y) {
  const std::size_t width = gamma.size();
  assert(width > 0 && beta.size() == width && x.size() % width == 0 && y.size() == x.size());
  assert(residual.empty() || residual.size() == x.size());
  const std::size_t rows = x.size() / width;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* in = x.data() + r * width;
    const float* add = residual.empty() ? nullptr : residual.data() + r * width;
    float* out = y.data() + r * width;
    // Pass 1 writes x + residual into y (same index, so y may alias either input) and sums it. Both
    // sums run in four accumulators: with one, every add waited for the previous one (24 dependent
    // adds per 384-wide row, the most of the op's time at MiniLM's width).
    __m512 sums[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    const auto sum_in = [&](std::size_t c, __mmask16 m, std::size_t part) {
      __m512 v = _mm512_maskz_loadu_ps(m, in + c);
      if (add != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, add + c));
      _mm512_mask_storeu_ps(out + c, m, v);
      sums[part] = _mm512_add_ps(sums[part], v);
    };
    std::size_t i = 0;
    for (; i + 64 <= width; i += 64)
      for (std::size_t part = 0; part < 4; ++part) sum_in(i + 16 * part, 0xFFFF, part);
    for (; i < width; i += 16) sum_in(i, first_lanes(width - i), 0);
    const float sum = sum_vector(_mm512_add_ps(_mm512_add_ps(sums[0], sums[1]), _mm512_add_ps(sums[2], sums[3])));
    const __m512 mean = _mm512_set1_ps(sum / static_cast<float>(width));
    // Two-pass variance: the row is in L1, and E[x²]−E[x]² loses digits when |mean| ≫ std.
    __m512 squares[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    const auto square_in = [&](std::size_t j, __mmask16 m, std::size_t part) {
      const __m512 centred = _mm512_maskz_sub_ps(m, _mm512_maskz_loadu_ps(m, out + j), mean);
      squares[part] = _mm512_fmadd_ps(centred, centred, squares[part]);
    };
    i = 0;
    for (; i + 64 <= width; i += 64)
      for (std::size_t part = 0; part < 4; ++part) square_in(i + 16 * part, 0xFFFF, part);
    for (; i < width; i += 16) square_in(i, first_lanes(width - i), 0);
    const float square_sum =
        sum_vector(_mm512_add_ps(_mm512_add_ps(squares[0], squares[1]), _mm512_add_ps(squares[2], squares[3])));
    const float inverse_std = 1.0F / std::sqrt(square_sum / static_cast<float>(width) + eps);
    const __m512 scale = _mm512_set1_ps(inverse_std);
    for (i = 0; i < width; i += 16) {
      const __mmask16 m = first_lanes(width - i);
      const __m512 centred = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, out + i), mean);
      const __m512 g = _mm512_maskz_loadu_ps(m, gamma.data() + i);
      const __m512 b = _mm512_maskz_loadu_ps(m, beta.data() + i);
      _mm512_mask_storeu_ps(out + i, m, _mm512_fmadd_ps(_mm512_mul_ps(centred, scale), g, b));
    }
  }
}

}  // namespace s1::backend::cpu::x86
