#include <cassert>
#include <cmath>

#include "backend/cpu/reference/decoder.h"

namespace s1::backend::cpu::reference {

void rms_norm(std::span<const float> x, std::span<const float> weight, float eps, std::span<float> y) {
  const std::size_t width = weight.size();
  assert(width > 0 && x.size() % width == 0 && y.size() == x.size());
  for (std::size_t r = 0; r < x.size() / width; ++r) {
    const float* row = x.data() + r * width;
    double squares = 0.0;
    for (std::size_t i = 0; i < width; ++i) squares += static_cast<double>(row[i]) * row[i];
    const double inverse_rms = 1.0 / std::sqrt(squares / static_cast<double>(width) + eps);
    // Every input of the row is read before its first output is written, so y may alias x.
    for (std::size_t i = 0; i < width; ++i)
      y[r * width + i] = static_cast<float>(row[i] * inverse_rms * weight[i]);
  }
}

}  // namespace s1::backend::cpu::reference
