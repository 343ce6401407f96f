#pragma once

#include <span>

namespace s1::kernels {

// The gated MLP's activation: y = silu(gate) ⊙ up = gate · sigmoid(gate) · up, elementwise.
// y may be gate or up.
void silu_mul(std::span<const float> gate, std::span<const float> up, std::span<float> y);

}  // namespace s1::kernels
