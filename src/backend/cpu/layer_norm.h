#pragma once

#include <span>

#include "backend/cpu/convert.h"

namespace s1::backend::cpu {

// Row-wise LayerNorm over rows of width gamma.size(): x and y are [rows, width] row-major fp32;
// y = (x - mean) / sqrt(var + eps) * gamma + beta, with the biased variance (as torch). y may be x.
void layer_norm(std::span<const float> x, std::span<const float> gamma, std::span<const float> beta,
                float eps, std::span<float> y);

// The same over x + residual (a transformer's post-attention/post-FFN "Add & Norm" in one pass).
// y may be x or residual.
void add_layer_norm(std::span<const float> x, std::span<const float> residual, std::span<const float> gamma,
                    std::span<const float> beta, float eps, std::span<float> y);

// layer_norm with its output rounded to bf16, for a bf16 matmul's input (PackedLinear's Bf16Bits
// overloads): the same bits as layer_norm then convert_fp32_to_bf16, without the fp32 rows in memory
// or a second parallel pass.
void layer_norm_to_bf16(std::span<const float> x, std::span<const float> gamma, std::span<const float> beta,
                        float eps, std::span<Bf16Bits> y);
// Both: y in fp32 (may be x; a post-norm residual stream) and y_bf16, its rounding (the next bf16
// matmul's input), in one pass instead of layer_norm then convert_fp32_to_bf16; the same bits as those.
void layer_norm_to_bf16(std::span<const float> x, std::span<const float> gamma, std::span<const float> beta,
                        float eps, std::span<float> y, std::span<Bf16Bits> y_bf16);

}  // namespace s1::backend::cpu
