#pragma once
// What every causal decoder family (qwen3, qwen3_5, later lfm2) offers the decision contracts: run
// token sequences, keep the per-sequence state, and branch many continuations from one shared
// prefix as a single batch. Contracts and readouts only ever see final-norm hidden rows and the
// output matrix, never a family's layers.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/cpu/precision.h"
#include "model/decoder/output_matrix.h"
#include "model/memory/sequence_memory.h"

namespace s1::decoder {

// Input rows that replace the token embeddings of a run of a branch's placeholder tokens (an
// image's merged vision features), laid out as frames × height × width tokens: a family with 3-D
// (M-RoPE) positions places the run's tokens on that grid, and the text after it resumes after the
// grid's largest side, not after its token count.
struct ImageRows {
  std::size_t first = 0;        // index into the branch's tokens of the run's first token
  std::span<const float> rows;  // [frames · height · width, hidden_size] fp32
  std::size_t frames = 1, height = 0, width = 0;
  [[nodiscard]] std::size_t tokens() const { return frames * height * width; }
};

// One continuation to run after a prefix: its tokens, which of them (indices into `tokens`,
// strictly increasing) must return their final-norm hidden row, and its images in token order
// (each run's tokens must be the family's image placeholder token).
struct Branch {
  std::span<const int32_t> tokens;
  std::span<const std::size_t> output_positions;
  std::span<const ImageRows> images = {};
};

struct BranchOutput {
  // [output_positions.size(), hidden_size] row-major, final-norm hidden states.
  std::vector<float> hidden;
  // The memory after the branch's last token; only when forward() was asked to keep states.
  std::unique_ptr<memory::SequenceMemory> state;
};

struct DecoderInfo {
  std::string family;  // "qwen3", "qwen3_5"
  std::size_t hidden_size = 0;
  std::size_t vocab_size = 0;
  std::size_t max_positions = 0;
  // A prefix whose length is a multiple of this reproduces the unshared forward most closely (the
  // chunk grid of chunked linear-attention prefill); 1 for plain attention.
  std::size_t prefix_granularity = 1;
  backend::cpu::Precision precision = backend::cpu::Precision::fp32;
  // The placeholder token whose embeddings a branch's images replace; −1: the family takes no images.
  int32_t image_token_id = -1;
};

class CausalDecoder {
 public:
  virtual ~CausalDecoder() = default;

  [[nodiscard]] virtual const DecoderInfo& info() const = 0;

  // Runs every branch after `prefix` (nullptr: from the empty sequence), all branches as one batch:
  // row-wise work (projections, MLP) over all rows at once, sequence-mixing work per branch against
  // the prefix's memory plus the branch's own tokens. `prefix` is never modified, so any number of
  // branches (and later calls) can share it. Branch outputs are exactly those of running
  // prefix tokens + branch tokens alone, up to floating-point reduction order.
  // Throws std::invalid_argument for a token id ≥ vocab_size, an empty branch, bad output positions,
  // a total length over max_positions, a prefix another model made, or images the family does not
  // take or that do not fit their placeholder runs. Not thread-safe (scratch
  // buffers are reused).
  virtual std::vector<BranchOutput> forward(const memory::SequenceMemory* prefix, std::span<const Branch> branches,
                                            bool keep_states) = 0;

  // The LM head rows [vocab_size, hidden_size] (the tied embedding table where the checkpoint ties
  // them), for label-row gathers and full-vocabulary logits.
  [[nodiscard]] virtual const OutputMatrix& lm_head() const = 0;

  // Convenience: the memory after `tokens` from the empty sequence.
  std::unique_ptr<memory::SequenceMemory> run_prefix(std::span<const int32_t> tokens) {
    const Branch branch{tokens, {}};
    auto outputs = forward(nullptr, std::span<const Branch>(&branch, 1), true);
    return std::move(outputs.front().state);
  }
};

}  // namespace s1::decoder
