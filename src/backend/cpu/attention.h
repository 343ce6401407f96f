#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backend/cpu/convert.h"
#include "backend/cpu/precision.h"
#include "backend/cpu/rope.h"

namespace s1::backend::cpu {

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
// rope (when not null; rotary_dim == head_dim, positions ≥ seq) rotates every query and key at its
// row's position within its sequence as attention reads it: apply_rope fused, qkv is not written.
void attention(std::span<const float> qkv, std::span<const std::size_t> lengths, AttentionShape shape,
               bool causal, std::span<float> out, Precision precision = Precision::fp32,
               const RopeTable* rope = nullptr);

// One sequence's slice of a packed (unpadded) batch: rows [offset, offset + length).
struct PackedSequence {
  std::size_t offset = 0;
  std::size_t length = 0;
};

// An encoder's bidirectional attention over an unpadded batch: every packed sequence attends over its
// own rows only, runs of sequences of equal length going to `attention` as one batch. qkv
// [rows, 3·heads·head_dim] as one fused projection leaves it, out [rows, heads·head_dim]; rows no
// sequence owns are not touched. half_window 0 means global; otherwise |i − j| ≤ half_window.
void packed_attention(std::span<const PackedSequence> layout, std::span<const float> qkv, std::size_t heads,
                      std::size_t head_dim, std::size_t half_window, std::span<float> out,
                      Precision precision = Precision::fp32, const RopeTable* rope = nullptr);

// Rows [row_begin, row_end) of packed_attention's output (all heads; each query over every visible
// key of its own sequence), on the calling thread with no parallel region of its own: one
// backend::cpu::Team thread's share, next to the other ops on the same rows. Rows in the range that no
// sequence owns are not touched. The Bf16Bits overload writes the rows rounded to bf16, the input of
// a bf16 PackedLinear, without a conversion pass; the overload with bf16 qkv reads a projection written
// in bf16 (PackedLinear's Bf16Bits output), half the bytes.
void packed_attention_rows(std::span<const PackedSequence> layout, std::span<const float> qkv, std::size_t heads,
                           std::size_t head_dim, std::size_t half_window, std::size_t row_begin, std::size_t row_end,
                           std::span<float> out, Precision precision = Precision::fp32,
                           const RopeTable* rope = nullptr);
void packed_attention_rows(std::span<const PackedSequence> layout, std::span<const float> qkv, std::size_t heads,
                           std::size_t head_dim, std::size_t half_window, std::size_t row_begin, std::size_t row_end,
                           std::span<Bf16Bits> out, Precision precision = Precision::fp32,
                           const RopeTable* rope = nullptr);
void packed_attention_rows(std::span<const PackedSequence> layout, std::span<const Bf16Bits> qkv, std::size_t heads,
                           std::size_t head_dim, std::size_t half_window, std::size_t row_begin, std::size_t row_end,
                           std::span<Bf16Bits> out, Precision precision = Precision::bf16,
                           const RopeTable* rope = nullptr);

// The keys and values of a bf16 packed projection laid out for the AMX attention kernel (channel pairs
// of 16 keys; key pairs of 16 channels) by the backend::cpu::Team thread that projected the rows, before
// the layer's barrier, so that no thread lays out every head's keys and values again after it, from
// rows another core has just written. Use it only where available(head_dim); packed_attention_rows
// over plain bf16 rows computes the same bits elsewhere.
class StagedKeyValues {
 public:
  // Whether the bf16 attention kernel in use reads staged keys and values at this head_dim (AMX, head_dim
  // a multiple of 32).
  [[nodiscard]] static bool available(std::size_t head_dim);

  // Sizes the storage for a layout; once per forward, before the threads stage into it.
  void reset(std::span<const PackedSequence> layout, std::size_t heads, std::size_t head_dim);
  // Lays out the keys and values of every head for rows [row_begin, row_end) of qkv ([rows,
  // 3·heads·head_dim] bf16, as packed_attention_rows reads it), and the padding after every sequence
  // whose last row is in the range. Threads may stage disjoint ranges at once; together the ranges
  // must cover every sequence's rows before attention reads them.
  void stage(std::span<const PackedSequence> layout, std::span<const Bf16Bits> qkv, std::size_t row_begin,
             std::size_t row_end);

  // Sequence s's head h, as AttentionHeadTask::staged_keys_values reads it.
  [[nodiscard]] const std::uint32_t* head(std::size_t sequence, std::size_t h) const {
    return data_.data() + offsets_[sequence] + h * head_sizes_[sequence];
  }

 private:
  std::size_t heads_ = 0;
  std::size_t head_dim_ = 0;
  std::vector<std::size_t> offsets_, head_sizes_;  // per sequence, in dwords
  std::vector<std::uint32_t> data_;
};

// packed_attention_rows (bf16 Q/K/V, bf16 output) with the keys and values read from `staged` (its
// stage() calls, for this layout, covering every sequence's rows): the same bits.
void packed_attention_rows(std::span<const PackedSequence> layout, std::span<const Bf16Bits> qkv,
                           const StagedKeyValues& staged, std::size_t heads, std::size_t head_dim,
                           std::size_t half_window, std::size_t row_begin, std::size_t row_end,
                           std::span<Bf16Bits> out);

}  // namespace s1::backend::cpu
