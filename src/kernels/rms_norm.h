#pragma once

#include <span>

namespace s1::kernels {

// Row-wise RMSNorm over rows of width weight.size(): x and y are [rows, width] row-major fp32;
// y = x · 1/sqrt(mean(x²) + eps) · weight. Zero-centred norms (Qwen3.5's (1 + w)) fold 1 + w into
// `weight` when the model loads. y may be x.
void rms_norm(std::span<const float> x, std::span<const float> weight, float eps, std::span<float> y);

}  // namespace s1::kernels
