#include <cassert>
#include <cmath>

#include "backend/cpu/reference/reference.h"

namespace s1::backend::cpu::reference {

void linear(std::span<const float> x, std::span<const float> weight, std::span<const float> bias,
            std::size_t in_features, std::size_t out_features, Activation activation, std::span<float> y) {
  assert(in_features > 0 && out_features > 0 && x.size() % in_features == 0);
  assert(weight.size() == in_features * out_features);
  assert(bias.empty() || bias.size() == out_features);
  const std::size_t rows = x.size() / in_features;
  assert(y.size() == rows * out_features);
  for (std::size_t m = 0; m < rows; ++m) {
    for (std::size_t n = 0; n < out_features; ++n) {
      double sum = bias.empty() ? 0.0 : bias[n];
      for (std::size_t k = 0; k < in_features; ++k)
        sum += static_cast<double>(x[m * in_features + k]) * weight[n * in_features + k];
      if (activation == Activation::gelu) sum = 0.5 * sum * (1.0 + std::erf(sum / std::sqrt(2.0)));
      y[m * out_features + n] = static_cast<float>(sum);
    }
  }
}

}  // namespace s1::backend::cpu::reference
