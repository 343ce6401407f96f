#pragma once

#include <span>

namespace s1::kernels {

// Exact GELU, 0.5·x·(1 + erf(x/√2)) (torch's default, approximate="none"), elementwise. y may be x.
void gelu(std::span<const float> x, std::span<float> y);

// GeGLU's gating, y = gelu(x) ⊙ gate, elementwise, in one pass. y may be x or gate.
void gelu_mul(std::span<const float> x, std::span<const float> gate, std::span<float> y);

// GeGLU over one fused projection: x is [rows, 2·width] with each row [input | gate] (ModernBERT's
// Wi as one matmul), y is [rows, width] = gelu(input) ⊙ gate. Row by row with gelu_mul's kernel.
void geglu(std::span<const float> x, std::size_t width, std::span<float> y);

}  // namespace s1::kernels
