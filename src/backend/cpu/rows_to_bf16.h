#pragma once
// The shared loop of the *_to_bf16 entry points (a bf16 matmul's input written by the op that
// produces it): the op computes a few rows at a time in fp32, into a buffer that stays in L1/L2, and
// the rows are rounded to bf16 from there — the same bits as the op followed by convert_fp32_to_bf16.

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <span>
#include <vector>

#include "backend/cpu/convert.h"
#include "backend/cpu/parallel.h"
#include "backend/cpu/variants.h"

namespace s1::backend::cpu {

// Computes y's `rows` rows of `width` values with op(first_row, block), block an fp32 buffer for the
// rows first_row… (block.size() / width of them), split across threads in pieces of at least
// `min_elements_per_thread` values. With `kept` (rows · width values), the blocks are kept's rows, so
// the fp32 rows stay as well (a residual stream that a bf16 matmul also reads), converted while in L1.
template <class Op>
void rows_to_bf16(std::size_t rows, std::size_t width, std::size_t min_elements_per_thread, std::span<Bf16Bits> y,
                  Op&& op, std::span<float> kept = {}) {
  assert(kept.empty() || kept.size() == rows * width);
  ConvertFp32ToBf16Fn* convert = selected_variants().convert_fp32_to_bf16.run;
  parallel_for(rows, (min_elements_per_thread + width - 1) / width, [&](std::size_t begin, std::size_t end) {
    constexpr std::size_t rows_per_block = 8;
    thread_local std::vector<float> scratch;
    for (std::size_t row = begin; row < end; row += rows_per_block) {
      const std::size_t size = std::min(rows_per_block, end - row) * width;
      std::span<float> block;
      if (kept.empty()) {
        scratch.resize(size);
        block = scratch;
      } else {
        block = kept.subspan(row * width, size);
      }
      op(row, block);
      convert(block, y.subspan(row * width, size));
    }
  });
}

// rows_to_bf16 for a gated activation over fused [a | b] rows of 2·width values (GeGLU, SwiGLU):
// output row r = gate(a_r, b_r).
template <class Value>
void gated_halves_to_bf16(std::span<const Value> x, std::size_t width, std::size_t min_elements_per_thread,
                          std::span<Bf16Bits> y,
                          void (*gate)(std::span<const Value>, std::span<const Value>, std::span<float>)) {
  assert(width > 0 && x.size() % (2 * width) == 0 && y.size() == x.size() / 2);
  rows_to_bf16(y.size() / width, width, min_elements_per_thread, y, [&](std::size_t first_row, std::span<float> block) {
    for (std::size_t r = 0; r < block.size() / width; ++r) {
      const std::size_t row = first_row + r;
      gate(x.subspan(2 * row * width, width), x.subspan((2 * row + 1) * width, width), block.subspan(r * width, width));
    }
  });
}

}  // namespace s1::backend::cpu
