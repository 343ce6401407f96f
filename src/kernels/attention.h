#pragma once

#include <cstddef>
#include <span>

#include "kernels/precision.h"

namespace s1::kernels {

struct AttentionShape {
  std::size_t batch = 0;
  std::size_t seq = 0;       // padded sequence length, rows per batch entry
  std::size_t heads = 0;     // query heads
  std::size_t kv_heads = 0;  // key/value heads (== heads for BERT; fewer for grouped-query)
  std::size_t head_dim = 0;
  std::size_t window = 0;    // 0, or a sliding window: query i sees keys j with |i − j| ≤ window

  [[nodiscard]] std::size_t qkv_width() const { return (heads + 2 * kv_heads) * head_dim; }
  [[nodiscard]] std::size_t out_width() const { return heads * head_dim; }
};

// Multi-head scaled dot-product attention, softmax(Q·Kᵀ/√head_dim + mask)·V, fp32.
//
// qkv: [batch·seq, qkv_width()] row-major, each row [q heads | k heads | v heads], each head
//      head_dim contiguous values: exactly the output of one fused QKV linear layer (Wq, Wk, Wv
//      stacked along the output dimension), so no transpose or split is needed.
// lengths: valid tokens per sequence (keys at positions ≥ length are masked out).
// causal: query i sees keys 0..i only (decoder prefill starting at position 0).
// shape.window (when not 0) further limits query i to keys j with |i − j| ≤ window.
// out: [batch·seq, out_width()], heads concatenated (the input of the output projection).
//      Rows at positions ≥ length are written as zeros.
// Query head h uses key/value head h / (heads / kv_heads).
// precision bf16 rounds Q, K, V and the softmax weights to bf16 for AMX products (fp32 softmax and
// accumulation); it falls back to fp32 where AMX is missing or head_dim is not a multiple of 32.
void attention(std::span<const float> qkv, std::span<const std::size_t> lengths, AttentionShape shape,
               bool causal, std::span<float> out, Precision precision = Precision::fp32);

}  // namespace s1::kernels
