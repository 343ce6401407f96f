#pragma once
// Small pieces every decoder family's forward pass needs in the same form.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <initializer_list>
#include <span>
#include <vector>

namespace s1::decoder {

// Row counts handed to oneDNN: multiples of 16 (AMX tiles), at most 8 sizes per octave, so a server
// sees a bounded set of matmul primitives whatever the request mix while padding stays under 1/8
// (a 200-token state runs 208 rows, not 224).
inline std::size_t rounded_rows(std::size_t rows) {
  const std::size_t granularity = std::max<std::size_t>(16, std::bit_ceil(rows) / 16);
  return (rows + granularity - 1) / granularity * granularity;
}

// Weight matrices stacked along the output dimension, so that one GEMM computes them all.
inline std::vector<float> concatenate(std::initializer_list<std::span<const float>> parts) {
  std::vector<float> joined;
  for (const std::span<const float> part : parts) joined.insert(joined.end(), part.begin(), part.end());
  return joined;
}

inline void add_in_place(std::span<float> sum, std::span<const float> addend) {
  for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += addend[i];
}

}  // namespace s1::decoder
