#pragma once
// Small pieces every decoder family's forward pass needs in the same form.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <initializer_list>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/cpu/cached_attention.h"
#include "backend/cpu/linear.h"
#include "backend/cpu/parallel.h"
#include "backend/cpu/rms_norm.h"
#include "backend/cpu/rope.h"
#include "backend/cpu/team.h"
#include "model/checkpoint/checkpoint.h"
#include "model/decoder/causal_decoder.h"

namespace s1::decoder {

// Row counts handed to oneDNN: multiples of 16 (AMX tiles), at most 8 sizes per octave, so a server
// sees a bounded set of matmul primitives whatever the request mix while padding stays under 1/8
// (a 200-token state runs 208 rows, not 224).
inline std::size_t rounded_rows(std::size_t rows) {
  const std::size_t granularity = std::max<std::size_t>(16, std::bit_ceil(rows) / 16);
  return (rows + granularity - 1) / granularity * granularity;
}

// One branch's place in a forward pass's batch: rows [offset, offset + length) of every activation
// matrix (the kernels' AttentionBranch, so that batched attention reads the same description).
using BranchRows = backend::cpu::AttentionBranch;

// A forward pass's branches stacked in one matrix, so that the projections and the MLP run once over
// all of them: each branch's rows, the real row count and the longest branch.
struct StackedRows {
  std::vector<BranchRows> branches;
  std::size_t total = 0;
  std::size_t longest = 0;
};

inline StackedRows stack_rows(std::span<const Branch> branches) {
  StackedRows stacked;
  for (const Branch& branch : branches) {
    stacked.branches.push_back(BranchRows{stacked.total, branch.tokens.size()});
    stacked.total += branch.tokens.size();
    stacked.longest = std::max(stacked.longest, branch.tokens.size());
  }
  return stacked;
}

// Writes each stacked row's input embedding, copy_row(token, destination) (a row of the embedding
// matrix, or of the LM head when they are tied, widened to fp32), into hidden_rows ([rows, hidden], rows
// ≥ the stacked total) and its absolute position (start + its index in the branch) into positions.
template <class CopyRow>
void embed_rows_from(std::span<const Branch> branches, std::span<const BranchRows> rows, std::size_t start,
                     CopyRow&& copy_row, std::size_t hidden, std::span<int64_t> positions,
                     std::span<float> hidden_rows) {
  for (std::size_t b = 0; b < branches.size(); ++b) {
    for (std::size_t t = 0; t < rows[b].length; ++t) {
      positions[rows[b].offset + t] = static_cast<int64_t>(start + t);
      copy_row(static_cast<std::size_t>(branches[b].tokens[t]),
               hidden_rows.subspan((rows[b].offset + t) * hidden, hidden));
    }
  }
}

// embed_rows_from over an fp32 table [vocab, hidden].
inline void embed_rows(std::span<const Branch> branches, std::span<const BranchRows> rows, std::size_t start,
                       std::span<const float> table, std::size_t hidden, std::span<int64_t> positions,
                       std::span<float> hidden_rows) {
  embed_rows_from(
      branches, rows, start,
      [&](std::size_t token, std::span<float> out) {
        const std::span<const float> embedding = table.subspan(token * hidden, hidden);
        std::copy(embedding.begin(), embedding.end(), out.begin());
      },
      hidden, positions, hidden_rows);
}

// Each branch's hidden rows at its output positions (hidden_rows: [rows, hidden], stacked as `rows`),
// after the final RMSNorm, into outputs[b].hidden.
inline void final_hidden_states(std::span<const Branch> branches, std::span<const BranchRows> rows,
                                std::span<const float> hidden_rows, std::size_t hidden,
                                std::span<const float> final_norm, float eps, std::span<BranchOutput> outputs) {
  for (std::size_t b = 0; b < branches.size(); ++b) {
    std::vector<float>& states = outputs[b].hidden;
    states.resize(branches[b].output_positions.size() * hidden);
    for (std::size_t i = 0; i < branches[b].output_positions.size(); ++i) {
      const std::size_t row = rows[b].offset + branches[b].output_positions[i];
      std::copy_n(hidden_rows.begin() + static_cast<std::ptrdiff_t>(row * hidden), hidden,
                  states.begin() + static_cast<std::ptrdiff_t>(i * hidden));
    }
    backend::cpu::rms_norm(states, final_norm, eps, states);
  }
}

// Weight matrices stacked along the output dimension, so that one GEMM computes them all.
inline std::vector<float> concatenate(std::initializer_list<std::span<const float>> parts) {
  std::vector<float> joined;
  for (const std::span<const float> part : parts) joined.insert(joined.end(), part.begin(), part.end());
  return joined;
}

// A projection from checkpoint tensors stacked along the output dimension (a fused QKV or gate|up;
// parts [out_i, in_features] each), packed once: Q8_0 or Q4_K parts of one dtype (a GGUF file's)
// stay quantised, their rows' blocks joined; any other mix is read as fp32 and packed at
// `precision`. The parts' mapped pages are released after packing.
inline backend::cpu::PackedLinear stacked_projection(const checkpoint::Checkpoint& weights,
                                                     std::initializer_list<const checkpoint::TensorView*> parts,
                                                     std::size_t in_features, backend::cpu::Precision precision) {
  const checkpoint::DType first = (*parts.begin())->dtype;
  bool quantized = first == checkpoint::DType::kQ8_0 || first == checkpoint::DType::kQ4_K;
  std::size_t out_features = 0;
  for (const checkpoint::TensorView* part : parts) {
    quantized = quantized && part->dtype == first;
    out_features += static_cast<std::size_t>(part->shape[0]);
  }
  if (quantized) {
    // A row's blocks are contiguous, so stacking rows is joining the parts' bytes.
    std::vector<std::byte> blocks;
    for (const checkpoint::TensorView* part : parts)
      blocks.insert(blocks.end(), part->bytes.begin(), part->bytes.end());
    backend::cpu::PackedLinear linear(first == checkpoint::DType::kQ8_0 ? backend::DType::q8_0 : backend::DType::q4_k,
                                      blocks, {}, in_features, out_features, precision);
    for (const checkpoint::TensorView* part : parts) weights.release_pages(*part);
    return linear;
  }
  std::vector<float> values;
  for (const checkpoint::TensorView* part : parts) {
    const std::vector<float> part_values = weights.to_float_released(*part);
    values.insert(values.end(), part_values.begin(), part_values.end());
  }
  return backend::cpu::PackedLinear(values, {}, in_features, out_features, precision);
}

// The grouped-query attention heads of packed [q heads | k heads | v heads] rows.
struct AttentionHeads {
  std::size_t heads = 0;
  std::size_t kv_heads = 0;
  std::size_t head_dim = 0;
  [[nodiscard]] std::size_t q_width() const { return heads * head_dim; }
  [[nodiscard]] std::size_t kv_width() const { return kv_heads * head_dim; }
  [[nodiscard]] std::size_t row_width() const { return q_width() + 2 * kv_width(); }
};

// Causal attention of the stacked rows of packed [q heads | k heads | v heads] rows `qkv`: every
// branch sees the prefix's keys and values ([prefix_length, kv_width]) and its own, read in place from
// `qkv`; the usual 1/√head_dim scale.
inline backend::cpu::CachedAttentionBranches packed_qkv_attention(
    std::span<const float> qkv, const AttentionHeads& shape, std::span<const float> prefix_keys,
    std::span<const float> prefix_values, std::size_t prefix_length, std::span<const BranchRows> rows,
    backend::cpu::Precision precision) {
  return {.q = qkv,
          .q_stride = shape.row_width(),
          .prefix_keys = prefix_keys,
          .prefix_values = prefix_values,
          .prefix_length = prefix_length,
          .keys = qkv.subspan(shape.q_width()),
          .values = qkv.subspan(shape.q_width() + shape.kv_width()),
          .kv_stride = shape.row_width(),
          .branches = rows,
          .causal = true,
          .shape = {.heads = shape.heads,
                    .kv_heads = shape.kv_heads,
                    .head_dim = shape.head_dim,
                    .scale = 1.0F / std::sqrt(static_cast<float>(shape.head_dim)),
                    .precision = precision}};
}

// Makes `table` (RoPE angles for rotary_dim at theta) cover positions [0, needed): rebuilt to the next
// power of two (at most max_positions) when it falls short, so a server's growing prompts rebuild it
// a few times, not per request.
inline void cover_positions(backend::cpu::RopeTable& table, std::size_t rotary_dim, float theta, std::size_t needed,
                            std::size_t max_positions) {
  if (table.positions >= needed) return;
  table = backend::cpu::rope_table(rotary_dim, theta, std::max(needed, std::min(std::bit_ceil(needed), max_positions)));
}

// QK-norm then RoPE on rows [rows.begin, rows.end) of packed `qkv`, on the calling thread (a
// backend::cpu::Team thread's share): q_norm/k_norm normalise each query and key head separately (a row's
// heads are contiguous head_dim-wide blocks, so each is a row for rms_norm), then both are rotated at
// `positions`, the angles read from `rope` (covering every position).
inline void qk_norm_rope_rows(std::span<float> qkv, backend::cpu::Team::Range rows, const AttentionHeads& shape,
                              std::span<const float> q_norm, std::span<const float> k_norm, float eps,
                              std::span<const int64_t> positions, const backend::cpu::RopeTable& rope) {
  if (rows.size() == 0) return;
  const std::size_t stride = shape.row_width();
  const std::size_t q_width = shape.q_width();
  const std::size_t kv_width = shape.kv_width();
  for (std::size_t r = rows.begin; r < rows.end; ++r) {
    const std::span<float> row = qkv.subspan(r * stride, stride);
    backend::cpu::rms_norm(row.first(q_width), q_norm, eps, row.first(q_width));
    backend::cpu::rms_norm(row.subspan(q_width, kv_width), k_norm, eps, row.subspan(q_width, kv_width));
  }
  const std::span<float> block = qkv.subspan(rows.begin * stride, rows.size() * stride);
  const std::span<const int64_t> block_positions = positions.subspan(rows.begin, rows.size());
  backend::cpu::apply_rope(block, rows.size(), stride, shape.heads, shape.head_dim, rope, block_positions);
  backend::cpu::apply_rope(block.subspan(q_width), rows.size(), stride, shape.kv_heads, shape.head_dim, rope,
                           block_positions);
}

// A forward pass's branches after a prefix of `start` tokens: each non-empty, within max_positions,
// with token ids inside the vocabulary and strictly increasing output positions into its tokens.
// Callers bypassing the contracts' checks get std::invalid_argument naming the family and branch.
inline void check_branches(const DecoderInfo& info, std::size_t start, std::span<const Branch> branches) {
  for (std::size_t b = 0; b < branches.size(); ++b) {
    const Branch& branch = branches[b];
    const std::string where = info.family + " forward: branch " + std::to_string(b);
    if (branch.tokens.empty()) throw std::invalid_argument(where + " has no tokens");
    if (start + branch.tokens.size() > info.max_positions) {
      throw std::invalid_argument(
          where + ": " + std::to_string(start) + " prefix + " + std::to_string(branch.tokens.size()) +
          " branch tokens exceed max_position_embeddings (" + std::to_string(info.max_positions) + ")");
    }
    for (const int32_t id : branch.tokens) {
      if (id < 0 || static_cast<std::size_t>(id) >= info.vocab_size) {
        throw std::invalid_argument(where + ": token id " + std::to_string(id) + " is outside the vocabulary");
      }
    }
    for (std::size_t i = 0; i < branch.output_positions.size(); ++i) {
      if (branch.output_positions[i] >= branch.tokens.size() ||
          (i > 0 && branch.output_positions[i] <= branch.output_positions[i - 1])) {
        throw std::invalid_argument(where + ": output positions must be strictly increasing indices into its tokens");
      }
    }
    if (!branch.images.empty() && info.image_token_id < 0) {
      throw std::invalid_argument(where + ": this " + info.family + " checkpoint takes no images");
    }
    std::size_t free_from = 0;  // the first token no earlier image covers
    for (const ImageRows& image : branch.images) {
      if (image.first < free_from || image.tokens() == 0 || image.first + image.tokens() > branch.tokens.size() ||
          image.rows.size() != image.tokens() * info.hidden_size) {
        throw std::invalid_argument(where + ": images must be non-empty runs of its tokens in order, not overlapping, " +
                                    "with one hidden-size row per token");
      }
      free_from = image.first + image.tokens();
      const auto run = branch.tokens.subspan(image.first, image.tokens());
      if (std::ranges::any_of(run, [&](int32_t id) { return id != info.image_token_id; })) {
        throw std::invalid_argument(where + ": an image's tokens must all be the image token " +
                                    std::to_string(info.image_token_id));
      }
    }
  }
}

// The memory a forward pass continues: `prefix`, or the model's own `empty` memory for nullptr. A
// memory another model made is refused rather than misread.
inline const memory::SequenceMemory& prefix_memory(const DecoderInfo& info, const memory::SequenceMemory* prefix,
                                                   const memory::SequenceMemory& empty) {
  if (prefix == nullptr) return empty;
  if (prefix->owner() != empty.owner() || prefix->shape() != empty.shape()) {
    throw std::invalid_argument(info.family + " forward: the prefix memory was not made by this model");
  }
  return *prefix;
}

}  // namespace s1::decoder
