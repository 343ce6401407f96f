#include <cassert>
#include <cmath>

#include "backend/cpu/reference/decoder.h"

namespace s1::backend::cpu::reference {

std::vector<float> rope_inverse_frequencies(std::size_t rotary_dim, float theta) {
  assert(rotary_dim > 0 && rotary_dim % 2 == 0);
  // Transformers: 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim)), every step in fp32. The
  // angle position·inv_freq reaches hundreds of radians, so an inv_freq one ulp off shifts long
  // positions visibly: keep the same fp32 rounding rather than computing it more exactly.
  std::vector<float> inverse_frequencies(rotary_dim / 2);
  for (std::size_t j = 0; j < rotary_dim / 2; ++j) {
    const float exponent = static_cast<float>(2 * j) / static_cast<float>(rotary_dim);
    inverse_frequencies[j] = 1.0F / std::pow(theta, exponent);
  }
  return inverse_frequencies;
}

namespace {

void rotate_heads(float* row, std::size_t heads, std::size_t head_dim, std::size_t half, const float* cosines,
                  const float* sines) {
  for (std::size_t h = 0; h < heads; ++h) {
    float* head = row + h * head_dim;
    for (std::size_t j = 0; j < half; ++j) {
      const float first = head[j];
      const float second = head[j + half];
      // q·cos + rotate_half(q)·sin, each product rounded to fp32 as torch does.
      head[j] = first * cosines[j] + (-second) * sines[j];
      head[j + half] = second * cosines[j] + first * sines[j];
    }
  }
}

}  // namespace

void rope_angles(std::span<const float> inverse_frequencies, int64_t position, std::span<float> cosines,
                 std::span<float> sines) {
  assert(cosines.size() == inverse_frequencies.size() && sines.size() == inverse_frequencies.size());
  const auto p = static_cast<float>(position);
  for (std::size_t j = 0; j < inverse_frequencies.size(); ++j) {
    const float angle = p * inverse_frequencies[j];
    cosines[j] = std::cos(angle);
    sines[j] = std::sin(angle);
  }
}

void apply_rope(std::span<float> x, std::size_t rows, std::size_t row_stride, std::size_t heads, std::size_t head_dim,
                std::span<const float> inverse_frequencies, std::span<const int64_t> positions) {
  const std::size_t half = inverse_frequencies.size();
  assert(2 * half <= head_dim && positions.size() == rows);
  assert(rows == 0 || x.size() >= (rows - 1) * row_stride + heads * head_dim);
  std::vector<float> cosines(half);
  std::vector<float> sines(half);
  for (std::size_t r = 0; r < rows; ++r) {
    rope_angles(inverse_frequencies, positions[r], cosines, sines);
    rotate_heads(x.data() + r * row_stride, heads, head_dim, half, cosines.data(), sines.data());
  }
}

void apply_mrope(std::span<float> x, std::size_t rows, std::size_t row_stride, std::size_t heads, std::size_t head_dim,
                 std::span<const float> inverse_frequencies, std::span<const uint8_t> axes,
                 std::span<const int64_t> positions) {
  const std::size_t half = inverse_frequencies.size();
  assert(2 * half <= head_dim && axes.size() == half && positions.size() == 3 * rows);
  assert(rows == 0 || x.size() >= (rows - 1) * row_stride + heads * head_dim);
  std::vector<float> cosines(half);
  std::vector<float> sines(half);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t j = 0; j < half; ++j) {
      // The same fp32 product as rope_angles, from this frequency's axis.
      const float angle = static_cast<float>(positions[axes[j] * rows + r]) * inverse_frequencies[j];
      cosines[j] = std::cos(angle);
      sines[j] = std::sin(angle);
    }
    rotate_heads(x.data() + r * row_stride, heads, head_dim, half, cosines.data(), sines.data());
  }
}

void apply_rope(std::span<float> x, std::size_t rows, std::size_t row_stride, std::size_t heads, std::size_t head_dim,
                std::size_t half, std::span<const float> cosines, std::span<const float> sines,
                std::span<const int64_t> positions) {
  assert(2 * half <= head_dim && positions.size() == rows && cosines.size() == sines.size());
  assert(rows == 0 || x.size() >= (rows - 1) * row_stride + heads * head_dim);
  for (std::size_t r = 0; r < rows; ++r) {
    const auto offset = static_cast<std::size_t>(positions[r]) * half;
    assert(offset + half <= cosines.size());
    rotate_heads(x.data() + r * row_stride, heads, head_dim, half, cosines.data() + offset, sines.data() + offset);
  }
}

}  // namespace s1::backend::cpu::reference
