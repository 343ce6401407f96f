#include <cassert>
#include <cmath>
#include <vector>

#include "backend/cpu/reference/reference.h"

namespace s1::backend::cpu::reference {

void layer_norm(std::span<const float> x, std::span<const float> residual, std::span<const float> gamma,
                std::span<const float> beta, float eps, std::span<float> y) {
  const std::size_t width = gamma.size();
  assert(width > 0 && beta.size() == width && x.size() % width == 0 && y.size() == x.size());
  assert(residual.empty() || residual.size() == x.size());
  std::vector<double> row(width);
  for (std::size_t r = 0; r < x.size() / width; ++r) {
    double sum = 0.0;
    for (std::size_t i = 0; i < width; ++i) {
      row[i] = x[r * width + i] + (residual.empty() ? 0.0F : residual[r * width + i]);
      sum += row[i];
    }
    const double mean = sum / static_cast<double>(width);
    double squares = 0.0;
    for (const double value : row) squares += (value - mean) * (value - mean);
    const double inverse_std = 1.0 / std::sqrt(squares / static_cast<double>(width) + eps);
    for (std::size_t i = 0; i < width; ++i)
      y[r * width + i] = static_cast<float>((row[i] - mean) * inverse_std * gamma[i] + beta[i]);
  }
}

}  // namespace s1::backend::cpu::reference
