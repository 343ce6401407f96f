#pragma once
// The ModernBERT encoder (Transformers' ModernBertModel): token embeddings and a bias-free-or-not
// LayerNorm, pre-norm layers (layer 0 without an attention norm) of fused-QKV attention with RoPE —
// global layers over the whole sequence, local layers within ±local_attention/2 tokens, each with
// its own RoPE θ — and a GeGLU MLP, then a final LayerNorm.
//
// Execution is unpadded: the rows of every sequence lie back to back, so a batch of unequal
// lengths costs only its tokens. Linear layers and norms run over all rows at once; attention runs
// per sequence (per run of equal-length sequences), which is the padding mask in its exact form.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backend/cpu/attention.h"
#include "backend/cpu/linear.h"
#include "backend/cpu/precision.h"
#include "backend/cpu/rope.h"
#include "model/checkpoint/checkpoint.h"
#include "model/encoder/encoder.h"
#include "model/modernbert/config.h"

namespace s1::modernbert {

class ModernBertEncoder final : public encoder::Encoder {
 public:
  // Maps and checks every tensor under `prefix` ("" for a ModernBertModel checkpoint, "model." for
  // ModernBertFor… task models, another prefix where the encoder is part of a larger model) against
  // the config's shapes and bias settings, then packs the linear layers for `precision`.
  // Throws checkpoint::LoadError naming the checkpoint and tensor.
  ModernBertEncoder(const ModernBertConfig& config, const checkpoint::Checkpoint& weights,
                    backend::cpu::Precision precision, const std::string& prefix);
  ~ModernBertEncoder() override;
  ModernBertEncoder(ModernBertEncoder&&) noexcept;
  ModernBertEncoder& operator=(ModernBertEncoder&&) noexcept;

  const ModernBertConfig& config() const { return config_; }
  const encoder::EncoderInfo& info() const override { return info_; }
  backend::cpu::Precision precision() const { return precision_; }

  // The last hidden states (after the final norm) of every sequence, packed: [rows, hidden_size]
  // where the rows of sequences[i] are layout()[i]. Every id must be < vocab_size and every sequence
  // non-empty and at most max_position_embeddings long (std::invalid_argument otherwise). The view
  // lives until the next call. Not thread-safe: scratch buffers are reused across calls.
  std::span<const float> forward(std::span<const std::span<const int32_t>> sequences) override;
  std::span<const backend::cpu::PackedSequence> layout() const { return layout_; }

 private:
  struct Layer {
    LayerType type = LayerType::global;
    std::vector<float> attention_norm_weight, attention_norm_bias;  // empty in layer 0 (no norm)
    backend::cpu::PackedLinear qkv;
    backend::cpu::PackedLinear attention_output;
    std::vector<float> mlp_norm_weight, mlp_norm_bias;
    backend::cpu::PackedLinear mlp_input;  // Wi: [input | gate] of GeGLU in one matmul
    backend::cpu::PackedLinear mlp_output;
  };

  ModernBertConfig config_;
  encoder::EncoderInfo info_;
  backend::cpu::Precision precision_;
  std::vector<float> token_embeddings_;
  std::vector<float> embedding_norm_weight_, embedding_norm_bias_;
  std::vector<Layer> layers_;
  std::vector<float> final_norm_weight_, final_norm_bias_;
  // RoPE angles per position for each θ, grown to the longest sequence seen.
  backend::cpu::RopeTable global_rope_, local_rope_;

  // Scratch, reused across calls.
  std::vector<backend::cpu::PackedSequence> layout_;
  std::vector<float> hidden_, normed_, qkv_, context_, projected_, activated_;
  // In bf16 the norms, attention and GeGLU write the matmuls' bf16 inputs directly (no conversion
  // pass), and the Q/K/V projection and Wi write bf16 for attention and GeGLU.
  std::vector<backend::cpu::Bf16Bits> normed_bf16_, qkv_bf16_, context_bf16_, projected_bf16_, activated_bf16_;
};

}  // namespace s1::modernbert
