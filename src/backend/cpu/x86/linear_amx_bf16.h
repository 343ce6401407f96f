#pragma once

// Our bf16 matmul on AMX tiles for PackedLinear (linear.cpp decides when it runs instead of oneDNN).
// Include anywhere; call only where cpu_features().amx_with_bf16().

#include <cstddef>
#include <span>

#include "backend/cpu/convert.h"

namespace s1::backend::cpu::x86 {

// Packed weights: the output columns in panels of 32 (two 16-column tiles), each panel contiguous so
// that it streams from memory once per call; inside a panel, for each 32-deep slice of K, the two B
// tiles of 16 rows × 16 (k, k+1) pairs (the VNNI pair layout tdpbf16ps reads). K is zero-padded to a
// multiple of 32 and N to a multiple of 32.
struct AmxWeightLayout {
  std::size_t in = 0;        // K
  std::size_t out = 0;       // N
  std::size_t k_blocks = 0;  // ⌈K / 32⌉
  std::size_t panels = 0;    // ⌈N / 32⌉

  explicit AmxWeightLayout(std::size_t in_features, std::size_t out_features)
      : in(in_features), out(out_features), k_blocks((in_features + 31) / 32), panels((out_features + 31) / 32) {}
  // Values per x row the kernel reads: K rounded up to the tile depth.
  [[nodiscard]] std::size_t padded_in() const { return k_blocks * 32; }
  [[nodiscard]] std::size_t values() const { return panels * k_blocks * 32 * 32; }
};

// weight: [out, in] row-major fp32 (nn.Linear), rounded to bf16 (nearest even) into `packed`
// (layout.values() values).
void pack_weights_amx_bf16(std::span<const float> weight, const AmxWeightLayout& layout, std::span<Bf16Bits> packed);

// x ([rows, in] row-major, fp32 or bf16) copied as bf16 into `packed` in the order the kernel reads
// it: blocks of 32 rows (zero rows past the last), and in each, per 32-deep slice of K, the upper and
// lower 16-row tiles, 1 KB each (zeros past K). Each tile then streams as 16 consecutive cache lines
// rather than 16 rows K·2 bytes apart. packed: packed_rows_values(rows) values, 64-byte aligned; a
// call for rows from 32·b on writes from packed_rows_values(layout, 32·b) on.
constexpr std::size_t amx_block_rows = 32;
[[nodiscard]] std::size_t packed_rows_values(const AmxWeightLayout& layout, std::size_t rows);
void pack_rows_amx_bf16(const Bf16Bits* x, std::size_t rows, const AmxWeightLayout& layout, Bf16Bits* packed);
void pack_rows_amx_bf16(const float* x, std::size_t rows, const AmxWeightLayout& layout, Bf16Bits* packed);

struct AmxLinearTask {
  AmxWeightLayout layout;
  const Bf16Bits* weights = nullptr;  // packed
  const float* bias = nullptr;        // [out] or null
  const Bf16Bits* x = nullptr;        // all rows, packed by pack_rows_amx_bf16
  std::size_t rows = 0;
  bool gelu = false;
  bool accumulate = false;  // y += … (fp32 y only)
  void* y = nullptr;        // [rows, out] row-major, fp32 or bf16
  bool y_bf16 = false;
};

// Computes the output columns of panels [first_panel, end_panel) on the calling thread:
// y = gelu?(x · Wᵀ + bias) (+ y), fp32 sums, bf16 y rounded to nearest even.
void linear_amx_bf16(const AmxLinearTask& task, std::size_t first_panel, std::size_t end_panel);

}  // namespace s1::backend::cpu::x86
