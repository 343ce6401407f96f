#pragma once
// Gated DeltaNet ops (Qwen3.5's linear-attention layers): the depthwise causal conv with a carried
// tail, the L2 norm of queries and keys, the gated delta rule (chunked prefill form) and the gated
// RMSNorm of its output. All fp32; the entry points split channels, rows or value heads across the
// shared thread pool and run the variant dispatch.cpp chose (backend/cpu/variants.h) on each piece.

#include <cstddef>
#include <span>

#include "backend/cpu/convert.h"

namespace s1::backend::cpu {

// Depthwise causal conv1d over time, then SiLU, continuing a sequence.
//   x: `rows` pre-conv rows of `channels` values, row r at x[r·x_stride];
//   weight: [channels, kernel] (torch's Conv1d weight [channels, 1, kernel]), no bias;
//   tail: [kernel − 1, channels], the pre-conv rows just before row 0, oldest first (zeros at the
//     start of a sequence); on return, the last kernel − 1 pre-conv rows of tail + x;
//   y: [rows, channels].
// y[t, c] = SiLU(Σ_j weight[c, j] · x[t − (kernel − 1) + j, c]), earlier rows taken from the tail.
void causal_conv1d_silu(std::span<const float> x, std::size_t rows, std::size_t x_stride,
                        std::span<const float> weight, std::size_t kernel, std::span<float> tail,
                        std::span<float> y);

// Per row of `dim` values: y = (x · 1/sqrt(Σx² + eps)) · scale (the FLA-library L2 norm Transformers
// applies to GDN queries and keys, then the query scale as a separate product). y may be x.
void l2_norm_scaled(std::span<const float> x, std::size_t dim, float eps, float scale, std::span<float> y);

// Gated RMSNorm over rows of width weight.size(): y = (x · 1/sqrt(mean(x²) + eps)) · weight · SiLU(gate).
// x, gate, y: [rows, width]; y may be x.
void gated_rms_norm(std::span<const float> x, std::span<const float> gate, std::span<const float> weight, float eps,
                    std::span<float> y);
// gated_rms_norm with its output rounded to bf16, for a bf16 matmul's input (the GDN output
// projection): the same bits as gated_rms_norm then convert_fp32_to_bf16, in one pass.
void gated_rms_norm_to_bf16(std::span<const float> x, std::span<const float> gate, std::span<const float> weight,
                            float eps, std::span<Bf16Bits> y);

struct GatedDeltaShape {
  std::size_t k_heads = 0;
  std::size_t v_heads = 0;  // a multiple of k_heads: key head h / (v_heads / k_heads) serves value head h
  std::size_t k_dim = 0;
  std::size_t v_dim = 0;
};

// `rows` consecutive tokens of one sequence.
struct GatedDeltaInputs {
  std::span<const float> query;  // [rows, k_heads·k_dim], L2-normalised and scaled
  std::span<const float> key;    // [rows, k_heads·k_dim], L2-normalised
  std::span<const float> value;  // row r at value[r·value_stride], v_heads·v_dim values
  std::size_t value_stride = 0;
  std::span<const float> g;     // [rows, v_heads]: log of the per-token state decay (≤ 0)
  std::span<const float> beta;  // [rows, v_heads]
  std::size_t rows = 0;
};

// The gated delta rule per value head, from state S ([v_heads, k_dim, v_dim] fp32, updated in place):
//   S ← S·exp(g_t);  S ← S + k_t ⊗ β_t(v_t − Sᵀk_t);  out_t = Sᵀq_t   (out: [rows, v_heads·v_dim]),
// evaluated in the chunked (WY / UT-transform) form of Transformers' torch_chunk_gated_delta_rule.
// Chunks of `chunk_size` tokens are counted from the sequence start: `first_position` is the
// absolute position of row 0, so a continuation after a prefix that is not a multiple of
// chunk_size first finishes the prefix's last chunk, and rounding follows the unshared forward.
void gated_delta_rule(const GatedDeltaInputs& inputs, GatedDeltaShape shape, std::size_t first_position,
                      std::size_t chunk_size, std::span<float> state, std::span<float> out);

// The same rule continuing from a state it does not modify, so that many branches can read one
// shared prefix state: `initial` is the state before row 0 ([v_heads, k_dim, v_dim]; empty: zeros,
// the start of a sequence), `state` receives the state after the last row. Each value head's part
// of `initial` is copied by the thread that then runs the head, while it is hot in its cache.
void gated_delta_rule(const GatedDeltaInputs& inputs, GatedDeltaShape shape, std::size_t first_position,
                      std::size_t chunk_size, std::span<const float> initial, std::span<float> state,
                      std::span<float> out);

}  // namespace s1::backend::cpu
