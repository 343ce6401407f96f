#pragma once

#include <cstddef>
#include <span>

#include "kernels/precision.h"

namespace s1::kernels {

struct CachedAttentionShape {
  std::size_t heads = 0;     // query heads
  std::size_t kv_heads = 0;  // key/value heads; query head h reads kv head h / (heads / kv_heads)
  std::size_t head_dim = 0;
  float scale = 1.0F;  // multiplies Q·K before the softmax (usually 1/√head_dim)
  // bf16 lets Q·Kᵀ and P·V round their operands to bf16 (on AMX); the softmax stays fp32.
  Precision precision = Precision::fp32;
};

// Grouped-query attention of m query rows against n cached key/value rows of ONE sequence: a
// decoder's prefill (m = n), a branch after a shared prefix (m < n), or one decode step (m = 1).
//
// q: query row i at q.data() + i·q_stride, heads·head_dim values, head-major (so rows can be read in
//    place from a fused QKV projection).
// keys, values: [n, kv_heads·head_dim] row-major.
// Query row i has absolute position first_query_position + i; when causal it sees keys
// 0..first_query_position + i (which must be < n), else all n keys.
// Softmax and accumulation in fp32 or better.
// out: [m, heads·head_dim] row-major, heads concatenated (the input of the output projection).
void cached_attention(std::span<const float> q, std::size_t q_stride, std::size_t m, std::span<const float> keys,
                      std::span<const float> values, std::size_t n, std::size_t first_query_position, bool causal,
                      CachedAttentionShape shape, std::span<float> out);

// A branch's rows inside the stacked rows of several branches (queries, own keys, outputs).
struct AttentionBranch {
  std::size_t offset = 0;
  std::size_t length = 0;
};

// Every branch of a forward pass against one shared prefix: branch b's query row t (at
// q.data() + (offset + t)·q_stride, absolute position prefix_length + t) sees all prefix_length
// prefix keys and, when causal, its own keys 0..t (else all of its own), never another branch's.
// Equals cached_attention per branch over [prefix rows | its own rows], without building that block
// per branch: on AMX the prefix is laid out into tiles once per kv head for all branches and query
// heads.
// prefix_keys, prefix_values: [prefix_length, kv_heads·head_dim]; keys, values: own key/value row r of
// the stacked branches at keys.data() + r·kv_stride (e.g. in place in a fused QKV projection);
// out: [Σ lengths, heads·head_dim], rows stacked as the branches.
void cached_attention_branches(std::span<const float> q, std::size_t q_stride, std::span<const float> prefix_keys,
                               std::span<const float> prefix_values, std::size_t prefix_length,
                               std::span<const float> keys, std::span<const float> values, std::size_t kv_stride,
                               std::span<const AttentionBranch> branches, bool causal, CachedAttentionShape shape,
                               std::span<float> out);

}  // namespace s1::kernels
