#pragma once

// Optimised x86 variants of the causal-decoder ops; dispatch.cpp chooses them from CPUID.

#include <cstddef>
#include <cstdint>
#include <span>

#include "backend/cpu/convert.h"
#include "backend/cpu/variants.h"

namespace s1::backend::cpu::x86 {

void cached_attention_head_avx512(const CachedAttentionHeadTask& task);
// Q·Kᵀ and P·V on AMX tiles with Q, K, P and V rounded to bf16 (Precision::bf16 only); other
// head sizes and blocks of fewer than 16 rows run cached_attention_head_avx512.
void cached_attention_head_amx_bf16(const CachedAttentionHeadTask& task);

// Keys and values rows [0, count) of one kv head (row j at keys/values + j·kv_stride, d values, d a
// multiple of 32) in bf16, in the B-tile layouts the AMX attention multiplies by: keys_pairs
// [d/2][padded] channel pairs of each key, values_pairs [padded/2][d] key pairs of each channel;
// columns [count, padded) zero. `padded` is a multiple of 32 and ≥ count.
void amx_bf16_key_value_layout(const float* keys, const float* values, std::size_t kv_stride, std::size_t count,
                               std::size_t padded, std::size_t d, std::uint32_t* keys_pairs,
                               std::uint32_t* values_pairs);

// One query head of a branch after a shared prefix, the prefix's and the branch's own keys and
// values laid out once (by amx_bf16_key_value_layout) for every query head and row block reading
// them: m query rows, the block's first at row first_row of the branch, against the whole prefix and
// the branch's own keys.
struct CachedAttentionBranchHeadTask {
  const float* q = nullptr;  // query row i at q + i·q_stride
  std::size_t q_stride = 0;
  std::size_t m = 0;
  const std::uint32_t* prefix_keys_pairs = nullptr;  // [d/2][prefix_padded]
  const std::uint32_t* prefix_values_pairs = nullptr;  // [prefix_padded/2][d]
  std::size_t prefix_length = 0;
  std::size_t prefix_padded = 0;  // a multiple of 32 (0 without a prefix)
  const std::uint32_t* own_keys_pairs = nullptr;  // [d/2][own_padded], the branch's keys from its first token
  const std::uint32_t* own_values_pairs = nullptr;  // [own_padded/2][d]
  std::size_t own_padded = 0;  // a multiple of 32, ≥ own_count
  std::size_t first_row = 0;
  std::size_t own_count = 0;  // the branch's rows
  bool causal = true;         // row i sees own keys 0..first_row + i, else all own_count
  std::size_t head_dim = 0;   // a multiple of 32
  float scale = 1.0F;
  float* out = nullptr;  // row i at out + i·out_stride, unless out_bf16 is set
  Bf16Bits* out_bf16 = nullptr;  // when set: row i rounded to bf16 at out_bf16 + i·out_stride
  std::size_t out_stride = 0;
};
// Q·Kᵀ and P·V on AMX tiles in bf16, any m ≥ 1 (the keys are laid out already, so short branches
// stay on tiles too).
void cached_attention_branch_head_amx_bf16(const CachedAttentionBranchHeadTask& task);
void rms_norm_avx512(std::span<const float> x, std::span<const float> weight, float eps, std::span<float> y);
void silu_mul_avx512(std::span<const float> gate, std::span<const float> up, std::span<float> y);

}  // namespace s1::backend::cpu::x86
