#pragma once
// Readouts over final-norm hidden rows, shared by every decoder contract.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace s1::decoder {

// log-softmax over one row of logits, in double.
[[nodiscard]] std::vector<double> log_softmax(std::span<const float> logits);

// Σ log p(continuation[i] | …) where row i of `logits` ([continuation.size(), vocab]) predicts
// continuation[i]: the candidate log-likelihood readout (no length normalisation).
[[nodiscard]] double sequence_log_likelihood(std::span<const float> logits, std::size_t vocab,
                                             std::span<const int32_t> continuation);

}  // namespace s1::decoder
