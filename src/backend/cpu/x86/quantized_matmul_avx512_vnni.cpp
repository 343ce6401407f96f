// The quantised matmul on AVX512-VNNI: vpdpbusd multiplies the unsigned weight bytes of 16 columns
// by 4 signed activation bytes broadcast from one row, 64 products per instruction; each 32-value
// block's int32 sums are then scaled into fp32 accumulators (the block scales differ per block).

#include <immintrin.h>

#include <cstring>

#include "backend/cpu/x86/quantized_matmul.h"

namespace s1::backend::cpu::x86 {
namespace {

// Rows per register tile: rows × tiles int32 and fp32 accumulators stay in the 32 zmm registers.
constexpr int tile_rows_max = 4;

std::int32_t load_i32(const std::int8_t* at) {
  std::int32_t value = 0;
  std::memcpy(&value, at, sizeof(value));
  return value;
}

__mmask16 column_mask(std::size_t out, std::size_t first) {
  const std::size_t left = out - first;
  return left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1U << left) - 1);
}

// Round to nearest even into the upper halves (torch's and our float_to_bf16's rounding; results
// here are finite).
__m256i to_bf16(__m512 v) {
  const __m512i bits = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF)));
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(rounded, 16));
}

template <int Rows, int Tiles, bool Nibbles>
void register_tile(const QuantizedMatmulTask& task, std::size_t row, std::size_t tile) {
  const QuantizedLayout& layout = task.layout;
  const std::size_t blocks = layout.blocks(), stride = layout.block_stride(), weight_bytes = layout.weight_bytes();
  const std::byte* weights[Tiles];
  for (int t = 0; t < Tiles; ++t) weights[t] = task.weights + (tile + t) * layout.tile_stride();
  const std::int8_t* x[Rows];
  for (int r = 0; r < Rows; ++r) x[r] = task.x.q + (row + r) * layout.in_features;
  __m512 acc[Rows][Tiles];
  for (int r = 0; r < Rows; ++r)
    for (int t = 0; t < Tiles; ++t) acc[r][t] = _mm512_setzero_ps();
  for (std::size_t b = 0; b < blocks; ++b) {
    // q4_k's sums start at zero and take the min term in fp32; q8_0's start at −128·Σq, which
    // undoes its weights' +128 in integers (one fp32 multiply-add per block fewer: measured ~20%).
    __m512i dot[Rows][Tiles];
    for (int r = 0; r < Rows; ++r) {
      const __m512i start =
          Nibbles ? _mm512_setzero_si512() : _mm512_set1_epi32(-128 * task.x.q_sums[(row + r) * blocks + b]);
      for (int t = 0; t < Tiles; ++t) dot[r][t] = start;
    }
    const std::size_t k = b * quantized_block_values;
    if constexpr (Nibbles) {
      const __m512i low_nibbles = _mm512_set1_epi8(0x0F);
      for (int pair = 0; pair < 4; ++pair) {
        __m512i low[Tiles], high[Tiles];
        for (int t = 0; t < Tiles; ++t) {
          const __m512i packed = _mm512_load_si512(weights[t] + b * stride + pair * 64);
          low[t] = _mm512_and_si512(packed, low_nibbles);
          high[t] = _mm512_and_si512(_mm512_srli_epi16(packed, 4), low_nibbles);
        }
        for (int r = 0; r < Rows; ++r) {
          const __m512i x_low = _mm512_set1_epi32(load_i32(x[r] + k + 8 * pair));
          const __m512i x_high = _mm512_set1_epi32(load_i32(x[r] + k + 8 * pair + 4));
          for (int t = 0; t < Tiles; ++t) {
            dot[r][t] = _mm512_dpbusd_epi32(dot[r][t], low[t], x_low);
            dot[r][t] = _mm512_dpbusd_epi32(dot[r][t], high[t], x_high);
          }
        }
      }
    } else {
      for (int group = 0; group < 8; ++group) {
        __m512i w[Tiles];
        for (int t = 0; t < Tiles; ++t) w[t] = _mm512_load_si512(weights[t] + b * stride + group * 64);
        for (int r = 0; r < Rows; ++r) {
          const __m512i xb = _mm512_set1_epi32(load_i32(x[r] + k + 4 * group));
          for (int t = 0; t < Tiles; ++t) dot[r][t] = _mm512_dpbusd_epi32(dot[r][t], w[t], xb);
        }
      }
    }
    __m512 s[Tiles], m[Tiles];
    for (int t = 0; t < Tiles; ++t) {
      const auto* scales = reinterpret_cast<const float*>(weights[t] + b * stride + weight_bytes);
      s[t] = _mm512_load_ps(scales);
      m[t] = Nibbles ? _mm512_load_ps(scales + quantized_tile_columns) : _mm512_setzero_ps();
    }
    for (int r = 0; r < Rows; ++r) {
      const __m512 d = _mm512_set1_ps(task.x.scales[(row + r) * blocks + b]);
      for (int t = 0; t < Tiles; ++t)
        acc[r][t] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(dot[r][t]), d), s[t], acc[r][t]);
      if constexpr (Nibbles) {
        const __m512 sum = _mm512_set1_ps(task.x.sums[(row + r) * blocks + b]);
        for (int t = 0; t < Tiles; ++t) acc[r][t] = _mm512_fnmadd_ps(m[t], sum, acc[r][t]);
      }
    }
  }
  const std::size_t out = layout.out_features;
  for (int t = 0; t < Tiles; ++t) {
    const std::size_t first = (tile + t) * quantized_tile_columns;
    const __mmask16 mask = column_mask(out, first);
    const __m512 bias = task.bias != nullptr ? _mm512_maskz_loadu_ps(mask, task.bias + first) : _mm512_setzero_ps();
    for (int r = 0; r < Rows; ++r) {
      const __m512 value = _mm512_add_ps(acc[r][t], bias);
      const std::size_t at = (row + r) * out + first;
      if (task.y_bf16) {
        _mm256_mask_storeu_epi16(static_cast<std::uint16_t*>(task.y) + at, mask, to_bf16(value));
      } else {
        float* y = static_cast<float*>(task.y) + at;
        _mm512_mask_storeu_ps(y, mask, task.accumulate ? _mm512_add_ps(value, _mm512_maskz_loadu_ps(mask, y)) : value);
      }
    }
  }
}

// Rows [row, rows) of `Tiles` tiles from `tile`, the last rows by smaller register tiles.
template <int Rows, int Tiles, bool Nibbles>
void rows_from(const QuantizedMatmulTask& task, std::size_t row, std::size_t tile) {
  for (; row + Rows <= task.x.rows; row += Rows) register_tile<Rows, Tiles, Nibbles>(task, row, tile);
  if constexpr (Rows > 1) {
    if (row < task.x.rows) rows_from<Rows - 1, Tiles, Nibbles>(task, row, tile);
  }
}

template <bool Nibbles>
void tiles(const QuantizedMatmulTask& task, std::size_t tile_begin, std::size_t tile_end) {
  std::size_t tile = tile_begin;
  for (; tile + 2 <= tile_end; tile += 2) rows_from<tile_rows_max, 2, Nibbles>(task, 0, tile);
  if (tile < tile_end) rows_from<tile_rows_max, 1, Nibbles>(task, 0, tile);
}

}  // namespace

void quantized_matmul_avx512_vnni(const QuantizedMatmulTask& task, std::size_t tile_begin, std::size_t tile_end) {
  if (task.layout.nibbles)
    tiles<true>(task, tile_begin, tile_end);
  else
    tiles<false>(task, tile_begin, tile_end);
}

void quantize_row_avx512(const float* x, std::size_t width, std::int8_t* q, float* scales, float* sums,
                         std::int32_t* q_sums) {
  for (std::size_t b = 0; b < width / quantized_block_values; ++b) {
    const float* at = x + b * quantized_block_values;
    const __m512 v0 = _mm512_loadu_ps(at), v1 = _mm512_loadu_ps(at + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
    // The same scalar operations as quant::quantize_activation_block, so q is bit for bit its q.
    const float d = amax / 127.0F;
    const float id = d != 0.0F ? 1.0F / d : 0.0F;
    const __m512 scale = _mm512_set1_ps(id);
    const __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, scale));  // MXCSR's nearest-even
    const __m512i q1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, scale));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + b * quantized_block_values), _mm512_cvtepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + b * quantized_block_values + 16), _mm512_cvtepi32_epi8(q1));
    scales[b] = d;
    const int sum = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
    sums[b] = d * static_cast<float>(sum);
    q_sums[b] = sum;
  }
}

}  // namespace s1::backend::cpu::x86
