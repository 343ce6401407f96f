// The AVX2 + FMA row ops: the same formulas and rounding order as the AVX-512 variants, eight lanes.

#include <cassert>
#include <cmath>
#include <limits>

#include "backend/cpu/x86/avx2.h"
#include "backend/cpu/x86/avx2_math.h"

namespace s1::backend::cpu::x86 {

using avx2::first_lanes;
using avx2::load;
using avx2::store;

void layer_norm_avx2(std::span<const float> x, std::span<const float> residual, std::span<const float> gamma,
                     std::span<const float> beta, float eps, std::span<float> y) {
  const std::size_t width = gamma.size();
  assert(width > 0 && beta.size() == width && x.size() % width == 0 && y.size() == x.size());
  assert(residual.empty() || residual.size() == x.size());
  for (std::size_t r = 0; r < x.size() / width; ++r) {
    const float* in = x.data() + r * width;
    const float* add = residual.empty() ? nullptr : residual.data() + r * width;
    float* out = y.data() + r * width;
    // Pass 1 writes x + residual into y (y may alias either input); four accumulators, so the adds
    // do not wait on each other.
    __m256 sums[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (std::size_t i = 0, part = 0; i < width; i += 8, part = (part + 1) % 4) {
      const __m256i m = first_lanes(width - i);
      __m256 v = load(in + i, m);
      if (add != nullptr) v = _mm256_add_ps(v, load(add + i, m));
      store(out + i, m, v);
      sums[part] = _mm256_add_ps(sums[part], v);
    }
    const float sum = avx2::sum_vector(_mm256_add_ps(_mm256_add_ps(sums[0], sums[1]), _mm256_add_ps(sums[2], sums[3])));
    const __m256 mean = _mm256_set1_ps(sum / static_cast<float>(width));
    // Two-pass variance: E[x²]−E[x]² loses digits when |mean| ≫ std.
    __m256 squares[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (std::size_t i = 0, part = 0; i < width; i += 8, part = (part + 1) % 4) {
      const __m256i m = first_lanes(width - i);
      const __m256 centred = _mm256_and_ps(_mm256_castsi256_ps(m), _mm256_sub_ps(load(out + i, m), mean));
      squares[part] = _mm256_fmadd_ps(centred, centred, squares[part]);
    }
    const float square_sum =
        avx2::sum_vector(_mm256_add_ps(_mm256_add_ps(squares[0], squares[1]), _mm256_add_ps(squares[2], squares[3])));
    const __m256 scale = _mm256_set1_ps(1.0F / std::sqrt(square_sum / static_cast<float>(width) + eps));
    for (std::size_t i = 0; i < width; i += 8) {
      const __m256i m = first_lanes(width - i);
      const __m256 centred = _mm256_sub_ps(load(out + i, m), mean);
      store(out + i, m,
            _mm256_fmadd_ps(_mm256_mul_ps(centred, scale), load(gamma.data() + i, m), load(beta.data() + i, m)));
    }
  }
}

void rms_norm_avx2(std::span<const float> x, std::span<const float> weight, float eps, std::span<float> y) {
  const std::size_t width = weight.size();
  assert(width > 0 && x.size() % width == 0 && y.size() == x.size());
  for (std::size_t r = 0; r < x.size() / width; ++r) {
    const float* row = x.data() + r * width;
    float* out = y.data() + r * width;
    __m256 squares[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    for (std::size_t i = 0, part = 0; i < width; i += 8, part ^= 1) {
      const __m256 v = load(row + i, first_lanes(width - i));
      squares[part] = _mm256_fmadd_ps(v, v, squares[part]);
    }
    const float mean = avx2::sum_vector(_mm256_add_ps(squares[0], squares[1])) / static_cast<float>(width);
    const __m256 inverse_rms = _mm256_set1_ps(1.0F / std::sqrt(mean + eps));
    // (x · 1/rms) · weight, rounded in Transformers' order.
    for (std::size_t i = 0; i < width; i += 8) {
      const __m256i m = first_lanes(width - i);
      store(out + i, m, _mm256_mul_ps(_mm256_mul_ps(load(row + i, m), inverse_rms), load(weight.data() + i, m)));
    }
  }
}

void silu_mul_avx2(std::span<const float> gate, std::span<const float> up, std::span<float> y) {
  assert(up.size() == gate.size() && y.size() == gate.size());
  const __m256 one = _mm256_set1_ps(1.0F);
  for (std::size_t i = 0; i < gate.size(); i += 8) {
    const __m256i m = first_lanes(gate.size() - i);
    const __m256 g = load(gate.data() + i, m);
    // silu(g) = g / (1 + e^(−g)); exp_vector clamps, so very negative g gives g / ~2e38 ≈ 0, not NaN.
    const __m256 silu = _mm256_div_ps(g, _mm256_add_ps(one, avx2::exp_vector(_mm256_sub_ps(_mm256_setzero_ps(), g))));
    store(y.data() + i, m, _mm256_mul_ps(silu, load(up.data() + i, m)));
  }
}

void gelu_avx2(std::span<const float> x, std::span<float> y) {
  assert(y.size() == x.size());
  for (std::size_t i = 0; i < x.size(); i += 8) {
    const __m256i m = first_lanes(x.size() - i);
    store(y.data() + i, m, avx2::gelu_vector(load(x.data() + i, m)));
  }
}

void gelu_mul_avx2(std::span<const float> x, std::span<const float> gate, std::span<float> y) {
  assert(gate.size() == x.size() && y.size() == x.size());
  for (std::size_t i = 0; i < x.size(); i += 8) {
    const __m256i m = first_lanes(x.size() - i);
    store(y.data() + i, m, _mm256_mul_ps(avx2::gelu_vector(load(x.data() + i, m)), load(gate.data() + i, m)));
  }
}

namespace {

// Eight bf16 values widened to fp32 (exact: bf16 is an fp32's upper half); `count` ≤ 8 are read.
__m256 load_bf16(const Bf16Bits* from, std::size_t count) {
  __m128i bits;
  if (count >= 8) {
    bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from));
  } else {
    alignas(16) Bf16Bits part[8] = {};
    for (std::size_t l = 0; l < count; ++l) part[l] = from[l];
    bits = _mm_load_si128(reinterpret_cast<const __m128i*>(part));
  }
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
}

}  // namespace

void gelu_mul_bf16_avx2(std::span<const Bf16Bits> x, std::span<const Bf16Bits> gate, std::span<float> y) {
  assert(gate.size() == x.size() && y.size() == x.size());
  for (std::size_t i = 0; i < x.size(); i += 8) {
    const std::size_t count = x.size() - i;
    const __m256 activated = avx2::gelu_vector(load_bf16(x.data() + i, count));
    store(y.data() + i, first_lanes(count), _mm256_mul_ps(activated, load_bf16(gate.data() + i, count)));
  }
}

void softmax_avx2(std::span<const float> x, std::size_t columns, std::span<float> y) {
  assert(columns > 0 && x.size() % columns == 0 && y.size() == x.size());
  const __m256 lowest = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  for (std::size_t r = 0; r < x.size() / columns; ++r) {
    const float* in = x.data() + r * columns;
    float* out = y.data() + r * columns;
    __m256 largest = lowest;
    for (std::size_t i = 0; i < columns; i += 8) {
      const __m256i m = first_lanes(columns - i);
      largest = _mm256_max_ps(largest, _mm256_blendv_ps(lowest, load(in + i, m), _mm256_castsi256_ps(m)));
    }
    const __m256 row_max = _mm256_set1_ps(avx2::max_vector(largest));
    __m256 sum = _mm256_setzero_ps();
    for (std::size_t i = 0; i < columns; i += 8) {
      const __m256i m = first_lanes(columns - i);
      const __m256 e = _mm256_and_ps(_mm256_castsi256_ps(m), avx2::exp_vector(_mm256_sub_ps(load(in + i, m), row_max)));
      store(out + i, m, e);
      sum = _mm256_add_ps(sum, e);
    }
    const __m256 inverse_sum = _mm256_set1_ps(1.0F / avx2::sum_vector(sum));
    for (std::size_t i = 0; i < columns; i += 8) {
      const __m256i m = first_lanes(columns - i);
      store(out + i, m, _mm256_mul_ps(load(out + i, m), inverse_sum));
    }
  }
}

}  // namespace s1::backend::cpu::x86
