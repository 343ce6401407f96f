#include "backend/cpu/x86/linear_amx_bf16.h"

#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstdint>
#include <vector>

#include "backend/cpu/x86/amx_tiles.h"
#include "backend/cpu/x86/avx512_math.h"

namespace s1::backend::cpu::x86 {
namespace {

constexpr std::size_t tile_bytes = 1024;         // 16 rows × 64 bytes
constexpr std::size_t panel_columns = 32;        // two B tiles side by side
constexpr std::size_t block_rows = amx_block_rows;  // two A tiles stacked
constexpr std::size_t k_block_bytes = 2 * tile_bytes;  // one K slice of a panel
constexpr std::size_t cache_line = 64;

// Tiles 0–3: the 32×32 fp32 block of C (0, 1 upper rows; 2, 3 lower); 4, 5: A (upper, lower 16 rows ×
// 32 K); 6, 7: B (left, right 16 columns × 32 K).

// Pulls the next panel into the cache a little at each step of the current one, so a panel's first
// use finds it there and the memory stream never stalls the tiles (cold weights: a forward pass reads
// each layer once).
class PanelPrefetch {
 public:
  PanelPrefetch(const std::uint8_t* next, std::size_t bytes, std::size_t steps)
      : cursor_(next), end_(next == nullptr ? nullptr : next + bytes),
        lines_per_step_((bytes / cache_line + steps - 1) / steps) {}
  void step() {
    for (std::size_t line = 0; line < lines_per_step_ && cursor_ < end_; ++line, cursor_ += cache_line)
      _mm_prefetch(reinterpret_cast<const char*>(cursor_), _MM_HINT_T0);
  }

 private:
  const std::uint8_t* cursor_;
  const std::uint8_t* end_;
  std::size_t lines_per_step_;
};

inline __mmask16 first_lanes(std::size_t count) {
  return count >= 16 ? __mmask16{0xFFFF} : static_cast<__mmask16>((1U << count) - 1U);
}

// The epilogue of one C block (bias, GELU, the residual sum, the store to y), done a few rows at a time
// while the tiles compute the next block: the vector units work while the AMX unit does, instead of
// each waiting for the other (GELU on a 32×32 block costs about as much as its products at K = 384).
class PendingStore {
 public:
  explicit PendingStore(const AmxLinearTask& task) : task_(task) {}

  // staged: rows × columns (≤ 32 × 32) fp32 values, 32 per row, for y at (first_row, first_column);
  // finished over `steps` calls of step().
  void start(const float* staged, std::size_t first_row, std::size_t rows, std::size_t first_column,
             std::size_t columns, std::size_t steps) {
    staged_ = staged;
    first_row_ = first_row;
    rows_ = rows;
    next_ = 0;
    rows_per_step_ = (rows + steps - 1) / steps;
    first_column_ = first_column;
    masks_[0] = first_lanes(columns);
    masks_[1] = first_lanes(columns > 16 ? columns - 16 : 0);
    for (int half = 0; half < 2; ++half)
      bias_[half] = task_.bias == nullptr ? _mm512_setzero_ps()
                                          : _mm512_maskz_loadu_ps(masks_[half], task_.bias + first_column + 16 * half);
  }
  void step() { store_rows(std::min(rows_, next_ + rows_per_step_)); }
  void finish() { store_rows(rows_); }

 private:
  void store_rows(std::size_t end) {
    for (; next_ < end; ++next_) {
      const std::size_t offset = (first_row_ + next_) * task_.layout.out + first_column_;
      for (int half = 0; half < 2; ++half) {
        if (masks_[half] == 0) continue;
        __m512 value = _mm512_add_ps(_mm512_load_ps(staged_ + next_ * panel_columns + 16 * half), bias_[half]);
        if (task_.gelu) value = gelu_vector(value);
        if (task_.y_bf16) {
          Bf16Bits* y = static_cast<Bf16Bits*>(task_.y) + offset + 16 * half;
          _mm256_mask_storeu_epi16(y, masks_[half], std::bit_cast<__m256i>(_mm512_cvtneps_pbh(value)));
        } else {
          float* y = static_cast<float*>(task_.y) + offset + 16 * half;
          if (task_.accumulate) value = _mm512_add_ps(value, _mm512_maskz_loadu_ps(masks_[half], y));
          _mm512_mask_storeu_ps(y, masks_[half], value);
        }
      }
    }
  }

  const AmxLinearTask& task_;
  const float* staged_ = nullptr;
  std::size_t first_row_ = 0, rows_ = 0, next_ = 0, rows_per_step_ = 0, first_column_ = 0;
  __mmask16 masks_[2] = {};
  __m512 bias_[2] = {};
};

// C block (32 or 16 rows × 32 columns) of the packed rows at `a` times one panel, into `c` (fp32, 32
// per row); the previous block's epilogue runs alongside.
template <bool two_row_tiles>
inline void multiply_block(const std::uint8_t* a, const std::uint8_t* panel, std::size_t k_blocks,
                           PanelPrefetch& prefetch, PendingStore& pending, float* c) {
  _tile_zero(0);
  _tile_zero(1);
  if constexpr (two_row_tiles) {
    _tile_zero(2);
    _tile_zero(3);
  }
  for (std::size_t kb = 0; kb < k_blocks; ++kb) {
    const std::uint8_t* b = panel + kb * k_block_bytes;
    const std::uint8_t* a_slice = a + kb * k_block_bytes;
    _tile_loadd(4, a_slice, 64);
    _tile_loadd(6, b, 64);
    _tile_loadd(7, b + tile_bytes, 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    if constexpr (two_row_tiles) {
      _tile_loadd(5, a_slice + tile_bytes, 64);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
    prefetch.step();
    pending.step();
  }
  pending.finish();
  constexpr long c_stride = panel_columns * sizeof(float);
  _tile_stored(0, c, c_stride);
  _tile_stored(1, c + 16, c_stride);
  if constexpr (two_row_tiles) {
    _tile_stored(2, c + tile_rows * panel_columns, c_stride);
    _tile_stored(3, c + tile_rows * panel_columns + 16, c_stride);
  }
}

// 32 values of row `row` from K offset `k` (zeros past `in` or for a missing row) as bf16.
inline void store_slice(const Bf16Bits* row, std::size_t k, std::size_t in, Bf16Bits* destination) {
  const std::size_t count = row == nullptr || k >= in ? 0 : std::min<std::size_t>(32, in - k);
  const __mmask32 mask = count >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((1U << count) - 1U);
  _mm512_store_si512(destination, _mm512_maskz_loadu_epi16(mask, row == nullptr ? nullptr : row + k));
}

inline void store_slice(const float* row, std::size_t k, std::size_t in, Bf16Bits* destination) {
  const std::size_t count = row == nullptr || k >= in ? 0 : std::min<std::size_t>(32, in - k);
  const __m512 low = _mm512_maskz_loadu_ps(first_lanes(count), row == nullptr ? nullptr : row + k);
  const __m512 high = _mm512_maskz_loadu_ps(first_lanes(count > 16 ? count - 16 : 0), row == nullptr ? nullptr : row + k + 16);
  _mm512_store_si512(destination, std::bit_cast<__m512i>(_mm512_cvtne2ps_pbh(high, low)));
}

template <class Value>
void pack_rows(const Value* x, std::size_t rows, const AmxWeightLayout& layout, Bf16Bits* packed) {
  const std::size_t blocks = (rows + block_rows - 1) / block_rows;
  for (std::size_t block = 0; block < blocks; ++block)
    for (std::size_t kb = 0; kb < layout.k_blocks; ++kb)
      for (std::size_t r = 0; r < block_rows; ++r) {
        const std::size_t row = block * block_rows + r;
        store_slice(row < rows ? x + row * layout.in : nullptr, kb * tile_depth, layout.in, packed);
        packed += tile_depth;
      }
}

}  // namespace

std::size_t packed_rows_values(const AmxWeightLayout& layout, std::size_t rows) {
  return (rows + block_rows - 1) / block_rows * block_rows * layout.padded_in();
}

void pack_rows_amx_bf16(const Bf16Bits* x, std::size_t rows, const AmxWeightLayout& layout, Bf16Bits* packed) {
  pack_rows(x, rows, layout, packed);
}

void pack_rows_amx_bf16(const float* x, std::size_t rows, const AmxWeightLayout& layout, Bf16Bits* packed) {
  pack_rows(x, rows, layout, packed);
}

void pack_weights_amx_bf16(std::span<const float> weight, const AmxWeightLayout& layout, std::span<Bf16Bits> packed) {
  assert(weight.size() == layout.in * layout.out && packed.size() == layout.values());
  std::vector<Bf16Bits> rounded(weight.size());
  convert_fp32_to_bf16(weight, rounded);
  // Value (k, n) of the [K, N] operand sits in the panel of n, the K slice of k, the tile of n's
  // 16-column half, at tile row (k mod 32) / 2, pair n mod 16, element k mod 2.
  std::size_t index = 0;
  for (std::size_t panel = 0; panel < layout.panels; ++panel)
    for (std::size_t kb = 0; kb < layout.k_blocks; ++kb)
      for (std::size_t half = 0; half < 2; ++half)
        for (std::size_t row = 0; row < tile_rows; ++row)
          for (std::size_t column = 0; column < 16; ++column)
            for (std::size_t element = 0; element < 2; ++element) {
              const std::size_t n = panel * panel_columns + half * 16 + column;
              const std::size_t k = kb * tile_depth + row * 2 + element;
              packed[index++] = n < layout.out && k < layout.in ? rounded[n * layout.in + k] : Bf16Bits{0};
            }
}

void linear_amx_bf16(const AmxLinearTask& task, std::size_t first_panel, std::size_t end_panel) {
  assert(task.rows > 0 && end_panel <= task.layout.panels);
  if (first_panel >= end_panel) return;
  const TileScope tiles;
  const std::size_t k_blocks = task.layout.k_blocks;
  const std::size_t panel_bytes = k_blocks * k_block_bytes;
  const std::size_t block_bytes = k_blocks * k_block_bytes;  // 32 rows of packed x
  const std::size_t padded_rows = (task.rows + tile_rows - 1) / tile_rows * tile_rows;
  const auto* x = reinterpret_cast<const std::uint8_t*>(task.x);
  const auto* weights = reinterpret_cast<const std::uint8_t*>(task.weights);
  // Each C block reads its rows of x and a panel whole, so one of the two comes from L2 at best. Rows
  // are taken in chunks of at most ~1 MB of x and panels in groups of at most ~512 KB, so both stay in
  // this core's 2 MB L2 while a group runs over every chunk: each panel comes from memory once.
  const std::size_t chunk_rows = std::max<std::size_t>(1, std::size_t{1 << 20} / block_bytes) * block_rows;
  const std::size_t group_panels = std::max<std::size_t>(1, (std::size_t{512} << 10) / panel_bytes);
  // Two staging blocks: one being stored to y while the tiles compute into the other.
  alignas(64) float staging[2][block_rows * panel_columns];
  std::size_t current = 0;
  PendingStore pending(task);
  for (std::size_t group = first_panel; group < end_panel; group += group_panels) {
    const std::size_t group_end = std::min(end_panel, group + group_panels);
    for (std::size_t chunk = 0; chunk < padded_rows; chunk += chunk_rows) {
      const std::size_t chunk_end = std::min(padded_rows, chunk + chunk_rows);
      const std::size_t row_blocks = (chunk_end - chunk + block_rows - 1) / block_rows;
      for (std::size_t panel = group; panel < group_end; ++panel) {
        const std::uint8_t* b = weights + panel * panel_bytes;
        // While the first chunk uses a panel, the next one (of this group or the next) is fetched, when
        // there are enough rows to spread it over (≤ 8 lines per 4 products): at fewer rows the
        // prefetches crowded out the tile loads (M = 8 and 32, K = 384: 1.3x slower with them; cold
        // M = 64: 1.25x slower; cold M = 256: 1.15x faster).
        const bool fetch_next = chunk == 0 && panel + 1 < end_panel && row_blocks >= 4;
        PanelPrefetch prefetch(fetch_next ? b + panel_bytes : nullptr, panel_bytes, row_blocks * k_blocks);
        const std::size_t first_column = panel * panel_columns;
        const std::size_t columns = std::min(panel_columns, task.layout.out - first_column);
        for (std::size_t first_row = chunk; first_row < chunk_end; first_row += block_rows) {
          const std::uint8_t* a = x + first_row / block_rows * block_bytes;
          float* c = staging[current];
          if (first_row + tile_rows < chunk_end) {
            multiply_block<true>(a, b, k_blocks, prefetch, pending, c);
          } else {
            multiply_block<false>(a, b, k_blocks, prefetch, pending, c);
          }
          pending.start(c, first_row, std::min(block_rows, task.rows - first_row), first_column, columns, k_blocks);
          current ^= 1;
        }
      }
    }
  }
  pending.finish();
}

}  // namespace s1::backend::cpu::x86
