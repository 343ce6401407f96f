#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backend/cpu/convert.h"
#include "backend/cpu/precision.h"
#include "backend/cpu/team.h"

namespace s1::backend::cpu {

struct CachedAttentionShape {
  std::size_t heads = 0;     // query heads
  std::size_t kv_heads = 0;  // key/value heads; query head h reads kv head h / (heads / kv_heads)
  std::size_t head_dim = 0;
  float scale = 1.0F;  // multiplies Q·K before the softmax (usually 1/√head_dim)
  // bf16 lets Q·Kᵀ and P·V round their operands to bf16 (on AMX); the softmax stays fp32.
  Precision precision = Precision::fp32;

  [[nodiscard]] std::size_t q_width() const { return heads * head_dim; }    // one row of queries or output
  [[nodiscard]] std::size_t kv_width() const { return kv_heads * head_dim; }  // one row of keys or values
  [[nodiscard]] std::size_t group() const { return heads / kv_heads; }       // query heads per kv head
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

// cached_attention_branches' arguments, for the forms below.
struct CachedAttentionBranches {
  std::span<const float> q;
  std::size_t q_stride = 0;
  std::span<const float> prefix_keys, prefix_values;
  std::size_t prefix_length = 0;
  std::span<const float> keys, values;
  std::size_t kv_stride = 0;
  std::span<const AttentionBranch> branches;
  bool causal = true;
  CachedAttentionShape shape;
};

// The memory the threads of a team share during cached_attention_branches (keys and values laid
// out for the tiles once per kv head, read by every query head and row block); kept between calls so
// that a forward pass allocates it once. Its contents are the kernel's own.
struct CachedAttentionWorkspace {
  std::vector<std::uint32_t> tiles;
  std::vector<float> keys, values;  // [prefix | one branch] rows where the kernel needs them contiguous
};

// cached_attention_branches with out written in bf16 (the input of a bf16 output projection, with no
// conversion pass): the same bits as rounding the fp32 form's out.
void cached_attention_branches(const CachedAttentionBranches& attention, std::span<Bf16Bits> out);

// The same work shared by the threads of a backend::cpu::Team, every thread calling it with the same
// arguments (inside one region with the ops around it, instead of regions of its own). It starts and
// ends with team.barrier(): it reads q/k/v rows that other threads wrote before the call, and every
// row of out is written when it returns. Results equal the forms above.
void cached_attention_branches(Team& team, CachedAttentionWorkspace& workspace,
                               const CachedAttentionBranches& attention, std::span<float> out);
void cached_attention_branches(Team& team, CachedAttentionWorkspace& workspace,
                               const CachedAttentionBranches& attention, std::span<Bf16Bits> out);

}  // namespace s1::backend::cpu
