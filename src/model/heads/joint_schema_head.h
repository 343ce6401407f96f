#pragma once
// Clef's joint schema head (models.md §4.14, §4.15): reads the backbone's final hidden state at every
// position of one prompt and scores every option of every question of the record together. Learned
// from the public ports (SGLang python/sglang/srt/layers/joint_schema_head.py, llama.cpp's clef
// decision type); parameter names are joint_head.safetensors'.
//
//   normalized = LayerNorm(hidden)          memory = normalized·Wmᵀ          global = normalized[T−1]
//   question/option vectors: means of normalized over their token spans; lexical: the mean of the LM
//   head rows of each option's tokens
//   routed = Wc·option + Wl·lexical + Wq'·question  → 2 evidence-routing layers (pre-norm
//   cross-attention of the options to LayerNorm(memory), GELU feed-forward)
//   fields = Wq·question + LayerNorm(Σ softmax(routed·Wq·question/√W)·routed) + Wg·global + type
//            → 4 pre-norm decoder layers (self-attention among the record's questions,
//            cross-attention to memory, GELU feed-forward) → LayerNorm
//   logit = e^min(p, ln 100)·cos(lexical, question + global)
//           + σ(gate)·(e^min(j, ln 100)·cos(fields, LayerNorm(routed)) + MLP([f, o, f⊙o, |f − o|]))
//
// Linears, norms and the attention softmax run as backend::Backend ops in fp32; the few elementwise
// steps the seam has no op for (span means, residual sums of gathered rows, cosines) read the
// host backend's buffers directly.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "model/common/backend_choice.h"
#include "model/decoder/output_matrix.h"

namespace s1::heads {

// joint_head_config.json: the six constructor arguments of the public JointSchemaHead. Clef-flash
// ships {4096, 1024, 2, 4, 16, 4096} (121.8M parameters), Clef {5120, 1024, 2, 4, 16, 4096} (128.0M).
struct JointHeadConfig {
  std::size_t hidden_size = 0;
  std::size_t width = 0;
  std::size_t routing_layers = 0;
  std::size_t layers = 0;
  std::size_t heads = 0;
  std::size_t feedforward = 0;
};

// Reads the file strictly: each of the six keys required as a positive integer, width a multiple of
// heads; any other key, a missing one or a bad value is a checkpoint::LoadError naming the file and
// the key.
JointHeadConfig read_joint_head_config(const std::filesystem::path& file);

// The head's question types, in the order of its type embedding.
enum class JointQuestionType : std::uint8_t { noul = 0, choice = 1, score = 2 };

// Tokens [begin, end) of the prompt.
struct TokenSpan {
  std::size_t begin = 0;
  std::size_t end = 0;
};

struct JointQuestionLayout {
  JointQuestionType type = JointQuestionType::noul;
  TokenSpan question;
  std::vector<TokenSpan> options;  // in the order the head scores them
};

class JointSchemaHead {
 public:
  // joint_head.safetensors (F32, F16 or BF16 tensors, widened to fp32): every tensor the config
  // implies with its shape, and no other; a checkpoint::LoadError names the file and the tensor.
  JointSchemaHead(const JointHeadConfig& config, const std::filesystem::path& weights_file,
                  backend::Backend& backend = model::default_backend());
  ~JointSchemaHead();
  JointSchemaHead(JointSchemaHead&&) noexcept;
  JointSchemaHead& operator=(JointSchemaHead&&) noexcept;

  [[nodiscard]] const JointHeadConfig& config() const;

  // One logit per option of each question, in layout order. hidden: [ids.size(), hidden_size]
  // final hidden states of the whole prompt; lm_head: the backbone's output rows (the lexical
  // term's). Throws std::invalid_argument for a layout that is empty, has an empty span, a span
  // outside the prompt or a question without options. Not thread-safe.
  [[nodiscard]] std::vector<std::vector<double>> logits(std::span<const float> hidden, std::span<const int32_t> ids,
                                                        std::span<const JointQuestionLayout> layout,
                                                        const decoder::OutputMatrix& lm_head);

 private:
  struct Weights;
  std::unique_ptr<Weights> weights_;
};

}  // namespace s1::heads
