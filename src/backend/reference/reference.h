#pragma once
// The reference backend: every op of backend.h written out plainly, serially, summing in double. It
// is the definition each backend is tested against (tests/unit/backend/ops_test.cpp), not a fast
// path; a backend may call these for an op it has no kernel for.

#include <memory>

#include "backend/backend.h"

namespace s1::backend::reference {

[[nodiscard]] std::unique_ptr<Backend> create();

// The reference PackedMatrix: the weights as fp32 (rounded to bf16 first for bf16 arithmetic).
[[nodiscard]] std::unique_ptr<PackedMatrix> pack_matmul(const Tensor& weight, const Tensor& bias, Arithmetic arithmetic,
                                                        Activation activation);
void matmul(const MatmulCall& call);  // call.weight from reference::pack_matmul
void norm(const NormCall& call);
void rope(const RopeCall& call);
void attention(const AttentionCall& call);
// The chunked form's definition is the recurrence itself, from call.initial into call.state.
void gated_delta_chunked(const GatedDeltaCall& call);
void gated_delta_recurrent(const GatedDeltaCall& call);
void short_conv(const ShortConvCall& call);
void glu(const GluCall& call);
void activate(Activation activation, const Tensor& x, const Tensor& y);
void embedding(const Tensor& table, const Tensor& ids, const Tensor& y);
void embedding_bag(const Tensor& table, const Tensor& ids, const Tensor& weights, const Tensor& y);
void gather_rows(const Tensor& x, const Tensor& rows, const Tensor& y);
void softmax_rows(const Tensor& x, const Tensor& rows, bool log, const Tensor& y);

// Value (r, c) of a 1- or 2-d fp32/bf16 tensor as float, and the store of one (rounded for bf16).
[[nodiscard]] float load(const Tensor& t, std::size_t r, std::size_t c);
void store(const Tensor& t, std::size_t r, std::size_t c, float value);

}  // namespace s1::backend::reference
