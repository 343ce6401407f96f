#include <bit>
#include <cassert>

#include "backend/cpu/x86/avx512_math.h"
#include "backend/cpu/x86/x86.h"

namespace s1::backend::cpu::x86 {

// vcvtneps2bf16 rounds to nearest-even like the reference; it also flushes denormal inputs to zero,
// which is harmless for activations.
void convert_fp32_to_bf16_avx512_bf16(std::span<const float> x, std::span<Bf16Bits> y) {
  assert(y.size() == x.size());
  std::size_t i = 0;
  for (; i + 32 <= x.size(); i += 32) {
    const __m512bh pair =
        _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x.data() + i + 16), _mm512_loadu_ps(x.data() + i));
    _mm512_storeu_si512(y.data() + i, std::bit_cast<__m512i>(pair));
  }
  for (; i < x.size(); i += 16) {
    const __mmask16 m = first_lanes(x.size() - i);
    const __m256bh half = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, x.data() + i));
    _mm256_mask_storeu_epi16(y.data() + i, m, std::bit_cast<__m256i>(half));
  }
}

}  // namespace s1::backend::cpu::x86
