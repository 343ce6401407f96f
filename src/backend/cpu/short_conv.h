#pragma once
// LFM2's gated short convolution (Lfm2ShortConv between in_proj and out_proj), continuing a sequence:
//   bcx: `rows` rows of 3·channels values [B | C | x] (in_proj's output chunked in that order);
//   weight: [channels, kernel] (torch's depthwise Conv1d weight [channels, 1, kernel]);
//   bias: [channels] or empty (conv_bias);
//   tail: [kernel − 1, channels], the gated inputs B ⊙ x of the rows just before row 0, oldest first
//     (zeros at the start of a sequence); on return, the last kernel − 1 gated inputs of tail + bcx;
//   y: [rows, channels].
// y[t, c] = C[t, c] · (bias[c] + Σ_j weight[c, j] · (B ⊙ x)[t − (kernel − 1) + j, c]), earlier rows taken
// from the tail. fp32 throughout; channels are split across the shared thread pool.
//
// One portable implementation: the conv is O(rows · channels · kernel) beside in_proj's
// O(rows · channels² · 3) GEMM, so a vector variant would not move a forward pass.

#include <cstddef>
#include <span>

namespace s1::backend::cpu {

void gated_short_conv(std::span<const float> bcx, std::size_t rows, std::span<const float> weight, std::size_t kernel,
                      std::span<const float> bias, std::span<float> tail, std::span<float> y);

}  // namespace s1::backend::cpu
