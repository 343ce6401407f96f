#pragma once

#include <cstddef>
#include <span>

namespace s1::backend::cpu {

// Sentence embeddings: mean of the first lengths[b] rows of sequence b.
// hidden: [batch, seq, width] row-major (padded rows ignored); out: [batch, width].
// A sequence of length 0 gives a zero row.
void mean_pool(std::span<const float> hidden, std::span<const std::size_t> lengths, std::size_t seq,
               std::span<float> out);

// Scales each row of [rows, columns] to unit L2 norm (torch.nn.functional.normalize, eps 1e-12).
// y may be x.
void l2_normalize(std::span<const float> x, std::size_t columns, std::span<float> y);

}  // namespace s1::backend::cpu
