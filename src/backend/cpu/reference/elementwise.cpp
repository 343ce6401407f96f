#include <bit>
#include <cassert>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <limits>

#include "backend/cpu/reference/reference.h"

namespace s1::backend::cpu::reference {

void gelu(std::span<const float> x, std::span<float> y) {
  assert(y.size() == x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double value = x[i];
    y[i] = static_cast<float>(0.5 * value * (1.0 + std::erf(value / std::sqrt(2.0))));
  }
}

void gelu_mul(std::span<const float> x, std::span<const float> gate, std::span<float> y) {
  assert(gate.size() == x.size() && y.size() == x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double value = x[i];
    y[i] = static_cast<float>(0.5 * value * (1.0 + std::erf(value / std::sqrt(2.0))) * gate[i]);
  }
}

void gelu_mul_bf16(std::span<const Bf16Bits> x, std::span<const Bf16Bits> gate, std::span<float> y) {
  assert(gate.size() == x.size() && y.size() == x.size());
  // bf16 is the upper half of an fp32: widening is exact.
  const auto widen = [](Bf16Bits bits) { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); };
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double value = widen(x[i]);
    y[i] = static_cast<float>(0.5 * value * (1.0 + std::erf(value / std::sqrt(2.0))) * widen(gate[i]));
  }
}

void softmax(std::span<const float> x, std::size_t columns, std::span<float> y) {
  assert(columns > 0 && x.size() % columns == 0 && y.size() == x.size());
  for (std::size_t r = 0; r < x.size() / columns; ++r) {
    const auto row = x.subspan(r * columns, columns);
    float largest = -std::numeric_limits<float>::infinity();
    for (const float value : row) largest = std::fmax(largest, value);
    double sum = 0.0;
    for (std::size_t i = 0; i < columns; ++i) sum += std::exp(static_cast<double>(row[i]) - largest);
    for (std::size_t i = 0; i < columns; ++i)
      y[r * columns + i] = static_cast<float>(std::exp(static_cast<double>(row[i]) - largest) / sum);
  }
}

void convert_fp32_to_bf16(std::span<const float> x, std::span<Bf16Bits> y) {
  assert(y.size() == x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &x[i], sizeof bits);
    if (std::isnan(x[i])) {
      y[i] = static_cast<Bf16Bits>((bits >> 16) | 0x40U);  // keep it a (quiet) NaN
      continue;
    }
    const std::uint32_t rounding = 0x7FFFU + ((bits >> 16) & 1U);
    y[i] = static_cast<Bf16Bits>((bits + rounding) >> 16);
  }
}

}  // namespace s1::backend::cpu::reference
