// The quantised matmul on AMX-INT8: per 32-value block, TDPBSUD multiplies 16 rows of signed
// activations (A: 16 × 32 bytes) by a tile's unsigned weights, whose packed block is already the B
// layout (8 rows of 4-byte groups × 16 columns); the int32 tile is stored and scaled into fp32 on
// AVX-512, since every block has scales of its own. Compiled everywhere, chosen only where CPUID
// reports AMX-INT8; it has never run on the machines this was written on (no AMX there).

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/x86/amx_tiles.h"
#include "backend/cpu/x86/quantized_matmul.h"

namespace s1::backend::cpu::x86 {
namespace {

// Tiles: 0 the activations (A), 1 the weights (B), 2 the int32 sums (C); the _tile_* intrinsics
// take literal tile numbers.
constexpr int a_tile = 0, b_tile = 1, c_tile = 2;
constexpr std::size_t block_rows = 16;

class Int8TileScope {
 public:
  Int8TileScope() {
    TileConfig config;
    config.rows[a_tile] = block_rows;
    config.bytes_per_row[a_tile] = quantized_block_values;
    config.rows[b_tile] = quantized_block_values / 4;
    config.bytes_per_row[b_tile] = 64;
    config.rows[c_tile] = block_rows;
    config.bytes_per_row[c_tile] = 64;
    _tile_loadconfig(&config);
  }
  ~Int8TileScope() { _tile_release(); }
  Int8TileScope(const Int8TileScope&) = delete;
  Int8TileScope& operator=(const Int8TileScope&) = delete;
};

}  // namespace

void quantized_matmul_amx_int8(const QuantizedMatmulTask& task, std::size_t tile_begin, std::size_t tile_end) {
  const QuantizedLayout& layout = task.layout;
  const std::size_t in = layout.in_features, out = layout.out_features, blocks = layout.blocks();
  const Int8TileScope scope;
  alignas(64) std::int32_t dots[block_rows][quantized_tile_columns];
  alignas(64) std::uint8_t unpacked[8 * 64];
  alignas(64) float acc[block_rows][quantized_tile_columns];
  // The last rows' A tile reads from a zero-padded copy, never past the activations.
  std::vector<std::int8_t> padded;
  for (std::size_t row = 0; row < task.x.rows; row += block_rows) {
    const std::size_t count = std::min(block_rows, task.x.rows - row);
    const std::int8_t* x = task.x.q + row * in;
    if (count < block_rows) {
      padded.assign(block_rows * in, 0);
      std::copy_n(x, count * in, padded.begin());
      x = padded.data();
    }
    for (std::size_t tile = tile_begin; tile < tile_end; ++tile) {
      std::memset(acc, 0, sizeof(acc));
      for (std::size_t b = 0; b < blocks; ++b) {
        const std::byte* block = task.weights + tile * layout.tile_stride() + b * layout.block_stride();
        const void* b_operand = block;
        if (layout.nibbles) {
          for (int pair = 0; pair < 4; ++pair) {
            const __m512i packed = _mm512_load_si512(block + pair * 64);
            const __m512i low = _mm512_set1_epi8(0x0F);
            _mm512_store_si512(unpacked + (2 * pair) * 64, _mm512_and_si512(packed, low));
            _mm512_store_si512(unpacked + (2 * pair + 1) * 64, _mm512_and_si512(_mm512_srli_epi16(packed, 4), low));
          }
          b_operand = unpacked;
        }
        _tile_zero(2);
        _tile_loadd(0, x + b * quantized_block_values, static_cast<long>(in));
        _tile_loadd(1, b_operand, 64);
        _tile_dpbsud(2, 0, 1);
        _tile_stored(2, dots, 64);
        const auto* scales = reinterpret_cast<const float*>(block + layout.weight_bytes());
        const __m512 s = _mm512_load_ps(scales), m = _mm512_load_ps(scales + quantized_tile_columns);
        for (std::size_t r = 0; r < count; ++r) {
          const __m512 d = _mm512_set1_ps(task.x.scales[(row + r) * blocks + b]);
          const __m512 sum = _mm512_set1_ps(task.x.sums[(row + r) * blocks + b]);
          const __m512 dot = _mm512_cvtepi32_ps(_mm512_load_si512(dots[r]));
          __m512 value = _mm512_fmadd_ps(_mm512_mul_ps(dot, d), s, _mm512_load_ps(acc[r]));
          _mm512_store_ps(acc[r], _mm512_fnmadd_ps(m, sum, value));
        }
      }
      const std::size_t first = tile * quantized_tile_columns;
      for (std::size_t r = 0; r < count; ++r) {
        for (std::size_t c = 0; c < quantized_tile_columns && first + c < out; ++c) {
          const float value = acc[r][c] + (task.bias != nullptr ? task.bias[first + c] : 0.0F);
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
  }
}

}  // namespace s1::backend::cpu::x86
