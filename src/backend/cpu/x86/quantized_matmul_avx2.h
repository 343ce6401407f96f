#pragma once
// The quantised matmul on 256-bit registers, included by two files compiled with different flags:
// with AVX-VNNI (vpdpbusd, VEX-encoded) and without it (AVX2's vpmaddubsw + vpmaddwd). Each tile of
// 16 columns is two halves of 8. Only x86/quantized_matmul_avx2.cpp and _avx_vnni.cpp include it.

#include <immintrin.h>

#include <cstring>

#include "backend/backend.h"
#include "backend/cpu/x86/quantized_matmul.h"

namespace s1::backend::cpu::x86::avx2 {

// 2 rows × 2 halves of int32 and fp32 accumulators fit the 16 ymm registers with the operands.
constexpr int tile_rows_max = 2;

inline std::int32_t load_i32(const std::int8_t* at) {
  std::int32_t value = 0;
  std::memcpy(&value, at, sizeof(value));
  return value;
}

// dot += Σ of 4 products u8 (weights) × s8 (x) per int32 lane. Without VNNI, vpmaddubsw's int16
// pair sums would saturate for q8_0's shifted weights (255·127·2 > 32767), so q8_0 multiplies the
// signed weights (u − 128) by |x| with x's sign moved onto them (|q| ≤ 127 on both sides: the
// products fit), and its caller then skips the min term, which the shift alone needs.
template <bool Vnni, bool SignedWeights>
__m256i dot_add(__m256i dot, __m256i weights, __m256i x) {
  if constexpr (Vnni) {
    return _mm256_dpbusd_avx_epi32(dot, weights, x);
  } else {
    __m256i pairs;
    if constexpr (SignedWeights) {
      const __m256i signed_weights = _mm256_xor_si256(weights, _mm256_set1_epi8(static_cast<char>(0x80)));
      pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(x), _mm256_sign_epi8(signed_weights, x));
    } else {
      pairs = _mm256_maddubs_epi16(weights, x);
    }
    return _mm256_add_epi32(dot, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
  }
}

template <int Rows, bool Nibbles, bool Vnni>
void register_tile(const QuantizedMatmulTask& task, std::size_t row, std::size_t tile) {
  constexpr bool signed_weights = !Nibbles && !Vnni;
  const QuantizedLayout& layout = task.layout;
  const std::size_t blocks = layout.blocks(), stride = layout.block_stride(), weight_bytes = layout.weight_bytes();
  const std::byte* weights = task.weights + tile * layout.tile_stride();
  const std::int8_t* x[Rows];
  for (int r = 0; r < Rows; ++r) x[r] = task.x.q + (row + r) * layout.in_features;
  __m256 acc[Rows][2];
  for (int r = 0; r < Rows; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::byte* block = weights + b * stride;
    __m256i dot[Rows][2];
    for (int r = 0; r < Rows; ++r) dot[r][0] = dot[r][1] = _mm256_setzero_si256();
    const std::size_t k = b * quantized_block_values;
    for (int group = 0; group < 8; ++group) {
      __m256i w[2];
      for (int h = 0; h < 2; ++h) {
        if constexpr (Nibbles) {
          const __m256i packed = _mm256_load_si256(reinterpret_cast<const __m256i*>(block + (group / 2) * 64 + h * 32));
          w[h] = _mm256_and_si256(group % 2 == 0 ? packed : _mm256_srli_epi16(packed, 4), _mm256_set1_epi8(0x0F));
        } else {
          w[h] = _mm256_load_si256(reinterpret_cast<const __m256i*>(block + group * 64 + h * 32));
        }
      }
      for (int r = 0; r < Rows; ++r) {
        const __m256i xb = _mm256_set1_epi32(load_i32(x[r] + k + 4 * group));
        for (int h = 0; h < 2; ++h) dot[r][h] = dot_add<Vnni, signed_weights>(dot[r][h], w[h], xb);
      }
    }
    const auto* scales = reinterpret_cast<const float*>(block + weight_bytes);
    for (int r = 0; r < Rows; ++r) {
      const __m256 d = _mm256_set1_ps(task.x.scales[(row + r) * blocks + b]);
      const __m256 sum = _mm256_set1_ps(task.x.sums[(row + r) * blocks + b]);
      for (int h = 0; h < 2; ++h) {
        const __m256 s = _mm256_load_ps(scales + 8 * h);
        acc[r][h] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(dot[r][h]), d), s, acc[r][h]);
        if constexpr (!signed_weights)
          acc[r][h] = _mm256_fnmadd_ps(_mm256_load_ps(scales + quantized_tile_columns + 8 * h), sum, acc[r][h]);
      }
    }
  }
  const std::size_t out = layout.out_features, first = tile * quantized_tile_columns;
  for (int r = 0; r < Rows; ++r) {
    alignas(32) float values[quantized_tile_columns];
    _mm256_store_ps(values, acc[r][0]);
    _mm256_store_ps(values + 8, acc[r][1]);
    for (std::size_t c = 0; c < quantized_tile_columns && first + c < out; ++c) {
      const float value = values[c] + (task.bias != nullptr ? task.bias[first + c] : 0.0F);
      const std::size_t at = (row + r) * out + first + c;
      if (task.y_bf16) {
        static_cast<std::uint16_t*>(task.y)[at] = float_to_bf16(value);
      } else {
        float* y = static_cast<float*>(task.y) + at;
        *y = task.accumulate ? *y + value : value;
      }
    }
  }
}

template <int Rows, bool Nibbles, bool Vnni>
void rows_from(const QuantizedMatmulTask& task, std::size_t row, std::size_t tile) {
  for (; row + Rows <= task.x.rows; row += Rows) register_tile<Rows, Nibbles, Vnni>(task, row, tile);
  if constexpr (Rows > 1) {
    if (row < task.x.rows) rows_from<Rows - 1, Nibbles, Vnni>(task, row, tile);
  }
}

template <bool Vnni>
void quantized_matmul(const QuantizedMatmulTask& task, std::size_t tile_begin, std::size_t tile_end) {
  for (std::size_t tile = tile_begin; tile < tile_end; ++tile) {
    if (task.layout.nibbles)
      rows_from<tile_rows_max, true, Vnni>(task, 0, tile);
    else
      rows_from<tile_rows_max, false, Vnni>(task, 0, tile);
  }
}

}  // namespace s1::backend::cpu::x86::avx2
