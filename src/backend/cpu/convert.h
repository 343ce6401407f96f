#pragma once

#include <bit>
#include <cstdint>
#include <span>

namespace s1::backend::cpu {

// bf16 values as their raw bits (the upper half of an IEEE fp32).
using Bf16Bits = std::uint16_t;

// fp32 → bf16 with round-to-nearest-even (what oneDNN and torch do), NaN stays NaN.
void convert_fp32_to_bf16(std::span<const float> x, std::span<Bf16Bits> y);

// bf16 → fp32, exact: the bits become the upper half.
inline float bf16_to_fp32(Bf16Bits bits) { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }

}  // namespace s1::backend::cpu
