#pragma once
// The tile setup every AMX kernel here shares (include only from files built with -mamx-tile): all
// eight tiles 16 rows × 64 bytes — 16×32 bf16 operands (A row-major, B in the VNNI pair layout) or
// 16×16 fp32 accumulators. Each kernel says which tile holds what.

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace s1::backend::cpu::x86 {

inline constexpr std::size_t tile_rows = 16;
inline constexpr std::size_t tile_depth = 32;  // bf16 values per A row; pairs × 2 per B row

struct alignas(64) TileConfig {
  std::uint8_t palette = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t bytes_per_row[16] = {};
  std::uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

// RAII: configures the tiles for this call and releases them (and the AMX state) on return, so a
// thread carries no AMX state between calls.
class TileScope {
 public:
  TileScope() {
    TileConfig config;
    for (int tile = 0; tile < 8; ++tile) {
      config.bytes_per_row[tile] = 64;
      config.rows[tile] = tile_rows;
    }
    _tile_loadconfig(&config);
  }
  ~TileScope() { _tile_release(); }
  TileScope(const TileScope&) = delete;
  TileScope& operator=(const TileScope&) = delete;
};

}  // namespace s1::backend::cpu::x86
