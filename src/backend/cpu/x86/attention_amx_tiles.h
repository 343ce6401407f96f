#pragma once
// The tile work shared by attention_amx_bf16.cpp and cached_attention_amx_bf16.cpp (include only
// from files built with -mamx-tile -mamx-bf16 -mavx512bf16). Tiles, as amx_tiles.h configures them:
// 0 (and 3 where both query tiles stay loaded) = A, 1 and 2 = B (alternating, so a load can overlap
// the previous product), 4–7 = four independent accumulators: with a single accumulator every
// tdpbf16ps waited for the one before it.

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace s1::backend::cpu::x86::amx_attention {

// Word i of the result takes word interleave_pairs[i]: (a0, b0, a1, b1, …) from (a0..a15, b0..b15).
inline constexpr std::array<std::uint16_t, 32> interleave_pairs = [] {
  std::array<std::uint16_t, 32> indices{};
  for (std::uint16_t k = 0; k < 16; ++k) {
    indices[2 * k] = k;
    indices[2 * k + 1] = static_cast<std::uint16_t>(16 + k);
  }
  return indices;
}();

// 32 floats → 32 bf16 (round to nearest even), stored contiguously.
inline void store_bf16_32(std::uint16_t* destination, __m512 low, __m512 high) {
  _mm512_storeu_si512(destination, std::bit_cast<__m512i>(_mm512_cvtne2ps_pbh(high, low)));
}

// `count` fp32 value rows (`stride` floats apart) into the B layout of P·V: row q of a tile holds
// keys (2q, 2q+1) of 16 channels, interleaved; pairs past the last row up to `padded` rows are zero,
// so padding adds 0 · 0.
inline void lay_out_fp32_values(const float* values, std::size_t stride, std::size_t count, std::size_t padded,
                                std::size_t d, std::uint32_t* values_pairs) {
  const __m512i interleave = _mm512_loadu_si512(interleave_pairs.data());
  for (std::size_t j = 0; j < count; j += 2) {
    const float* v0 = values + j * stride;
    const float* v1 = v0 + stride;
    for (std::size_t c = 0; c < d; c += 16) {
      const __m512 first = _mm512_loadu_ps(v0 + c);
      const __m512 second = j + 1 < count ? _mm512_loadu_ps(v1 + c) : _mm512_setzero_ps();
      const __m512i both = std::bit_cast<__m512i>(_mm512_cvtne2ps_pbh(second, first));
      _mm512_storeu_si512(values_pairs + (j / 2) * d + c, _mm512_permutexvar_epi16(interleave, both));
    }
  }
  std::fill(values_pairs + (count + 1) / 2 * d, values_pairs + padded / 2 * d, 0U);
}

// The accumulator counts a caller passes: with only 2 or 4 (a multiple of 32 columns, as the
// encoder kernel's are), the branches for odd counts drop out of the loops.
enum class Counts { one_to_four, two_or_four };

// C[4 + n] += A · B_n for n < count, where A is in tile 0 (multiply_accumulate) or tile 3
// (multiply_accumulate_a3) and B_n is a 16-row tile at b + n·b_step (bytes), rows b_stride bytes
// apart. Tile numbers are immediates of the instructions, hence one definition for both through a macro.
#define S1_DEFINE_MULTIPLY_ACCUMULATE(name, a_tile)                                                      \
  template <Counts counts = Counts::one_to_four>                                                         \
  inline void name(const std::uint8_t* b, std::size_t b_step, std::size_t b_stride, std::size_t count) { \
    constexpr bool pairs = counts == Counts::two_or_four;                                                \
    const auto stride = static_cast<long>(b_stride);                                                     \
    _tile_loadd(1, b, stride);                                                                           \
    _tile_dpbf16ps(4, a_tile, 1);                                                                        \
    if (pairs || count > 1) {                                                                            \
      _tile_loadd(2, b + b_step, stride);                                                                \
      _tile_dpbf16ps(5, a_tile, 2);                                                                      \
    }                                                                                                    \
    if (count > 2) {                                                                                     \
      _tile_loadd(1, b + 2 * b_step, stride);                                                            \
      _tile_dpbf16ps(6, a_tile, 1);                                                                      \
    }                                                                                                    \
    if (count > (pairs ? 2 : 3)) {                                                                       \
      _tile_loadd(2, b + 3 * b_step, stride);                                                            \
      _tile_dpbf16ps(7, a_tile, 2);                                                                      \
    }                                                                                                    \
  }
S1_DEFINE_MULTIPLY_ACCUMULATE(multiply_accumulate, 0)
S1_DEFINE_MULTIPLY_ACCUMULATE(multiply_accumulate_a3, 3)
#undef S1_DEFINE_MULTIPLY_ACCUMULATE

inline void zero_accumulators() {
  _tile_zero(4);
  _tile_zero(5);
  _tile_zero(6);
  _tile_zero(7);
}

// Stores accumulator n (n < count) at c + n·16 floats, rows c_stride bytes apart.
template <Counts counts = Counts::one_to_four>
inline void store_accumulators(float* c, std::size_t c_stride, std::size_t count) {
  constexpr bool pairs = counts == Counts::two_or_four;
  const auto stride = static_cast<long>(c_stride);
  _tile_stored(4, c, stride);
  if (pairs || count > 1) _tile_stored(5, c + 16, stride);
  if (count > 2) _tile_stored(6, c + 32, stride);
  if (count > (pairs ? 2 : 3)) _tile_stored(7, c + 48, stride);
}

}  // namespace s1::backend::cpu::x86::amx_attention
