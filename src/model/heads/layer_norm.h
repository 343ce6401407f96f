#pragma once

#include "backend/backend.h"

namespace s1::heads {

// LayerNorm of each row of x into y (y may be x, or bf16 for a bf16 matmul's input): the one
// normalisation the heads read checkpoints' (weight, bias) pairs with.
inline void layer_norm(backend::Backend& backend, const backend::Tensor& x, const backend::Tensor& weight,
                       const backend::Tensor& bias, float eps, const backend::Tensor& y) {
  backend.norm({.kind = backend::NormCall::Kind::layer, .x = x, .weight = weight, .bias = bias, .eps = eps, .y = y});
}

}  // namespace s1::heads
