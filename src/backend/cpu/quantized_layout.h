#pragma once
// The packed operands of a quantised matmul (q8_0 or q4_k weights, backend/quant_blocks.h), the
// form every variant (x86/quantized_matmul_*, reference/quantized_matmul.cpp) reads:
//
// Weights: output columns in tiles of 16 (the last padded with zero columns), each tile's K blocks
// of 32 values one after another, per (tile, block) `block_stride()` bytes:
//   the unsigned weight bytes u, column c's 4 consecutive k at offset (group·16 + c)·4:
//     q8_0: 8 groups of 4 k, u = q + 128;
//     q4_k: 4 group pairs, groups 2p and 2p+1 in the low and high nibbles (u = the 4-bit q);
//   then 16 fp32 scales s and 16 fp32 mins m of the tile's columns: w = s·u − m
//   (q8_0: s = d, m = 128·d; q4_k: s = d·scale, m = dmin·min of the 32-value sub-block).
// Unsigned weights against signed activations is the operand order of VNNI's vpdpbusd; the min
// term is then one multiply-add per block with the activations' block sums.
//
// Activations: rows of int8 q (quant::quantize_activation_block), per row and block the scale d,
// d·Σq and Σq.

#include <cstddef>
#include <cstdint>

namespace s1::backend::cpu {

inline constexpr std::size_t quantized_tile_columns = 16;
inline constexpr std::size_t quantized_block_values = 32;

struct QuantizedLayout {
  bool nibbles = false;  // q4_k
  std::size_t in_features = 0, out_features = 0;

  [[nodiscard]] std::size_t blocks() const { return in_features / quantized_block_values; }
  [[nodiscard]] std::size_t tiles() const {
    return (out_features + quantized_tile_columns - 1) / quantized_tile_columns;
  }
  [[nodiscard]] std::size_t weight_bytes() const { return nibbles ? 256 : 512; }
  [[nodiscard]] std::size_t block_stride() const { return weight_bytes() + 2 * quantized_tile_columns * sizeof(float); }
  [[nodiscard]] std::size_t tile_stride() const { return blocks() * block_stride(); }
  [[nodiscard]] std::size_t bytes() const { return tiles() * tile_stride(); }
};

struct QuantizedRows {
  const std::int8_t* q = nullptr;  // rows × in_features
  const float* scales = nullptr;   // rows × blocks: d
  const float* sums = nullptr;     // rows × blocks: d·Σq
  // rows × blocks: Σq, for q8_0's shift done in integers: the sums start at −128·Σq.
  const std::int32_t* q_sums = nullptr;
  std::size_t rows = 0;
};

// y [rows, out_features] (fp32 or bf16, row-major) = x·Wᵀ + bias (+ y when accumulating, fp32 only).
struct QuantizedMatmulTask {
  QuantizedLayout layout;
  const std::byte* weights = nullptr;  // 64-byte aligned
  QuantizedRows x;
  const float* bias = nullptr;  // out_features values or null
  bool accumulate = false;
  void* y = nullptr;
  bool y_bf16 = false;
};

}  // namespace s1::backend::cpu
