#include <cassert>
#include <cmath>

#include "backend/cpu/reference/decoder.h"

namespace s1::backend::cpu::reference {

void silu_mul(std::span<const float> gate, std::span<const float> up, std::span<float> y) {
  assert(up.size() == gate.size() && y.size() == gate.size());
  for (std::size_t i = 0; i < gate.size(); ++i) {
    const double value = gate[i];
    y[i] = static_cast<float>(value / (1.0 + std::exp(-value)) * up[i]);
  }
}

}  // namespace s1::backend::cpu::reference
