#pragma once

#include <span>

#include "backend/cpu/convert.h"

namespace s1::backend::cpu {

// Row-wise RMSNorm over rows of width weight.size(): x and y are [rows, width] row-major fp32;
// y = x · 1/sqrt(mean(x²) + eps) · weight. Zero-centred norms (Qwen3.5's (1 + w)) fold 1 + w into
// `weight` when the model loads. y may be x.
void rms_norm(std::span<const float> x, std::span<const float> weight, float eps, std::span<float> y);

// rms_norm with its output rounded to bf16, for a bf16 matmul's input (PackedLinear's Bf16Bits
// overloads): the same bits as rms_norm then convert_fp32_to_bf16, without the fp32 rows in memory
// or a second parallel pass.
void rms_norm_to_bf16(std::span<const float> x, std::span<const float> weight, float eps, std::span<Bf16Bits> y);

}  // namespace s1::backend::cpu
