#pragma once
// The BERT encoder: embeddings (word + absolute position + token type 0, LayerNorm) and post-norm
// transformer layers, with Q/K/V fused into one PackedLinear per layer.
//
// Batches are packed rather than padded: the rows of every sequence lie back to back, so a short
// candidate next to a long state costs only its own tokens. The linear layers and LayerNorms work
// row by row whatever sequence a row belongs to; attention runs per sequence, which is
// the padding mask in its exact form — no token ever attends to another sequence's rows. Each
// thread's row count is rounded up to a few sizes per octave so that oneDNN builds few matmul
// primitives; the extra rows are zeros that no sequence reads.
//
// The whole forward runs in one parallel region (backend::cpu::run_team): each thread takes its share of
// the rows through every op of every layer and the threads meet once per layer, after the Q/K/V
// projection, because attention reads the keys and values of rows another thread projected. Opening
// a region per op instead cost a thread wake-up each (~5 per layer), which dominated one sequence.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backend/cpu/attention.h"
#include "backend/cpu/linear.h"
#include "backend/cpu/precision.h"
#include "backend/cpu/team.h"
#include "model/bert/config.h"
#include "model/checkpoint/checkpoint.h"
#include "model/encoder/encoder.h"

namespace s1::bert {

class BertEncoder final : public encoder::Encoder {
 public:
  // Maps and checks every tensor (names with or without a "bert." prefix; shapes against the
  // config), then packs the linear layers for `precision`. Throws checkpoint::LoadError.
  BertEncoder(const BertConfig& config, const checkpoint::Checkpoint& weights, backend::cpu::Precision precision);
  ~BertEncoder() override;
  BertEncoder(BertEncoder&&) noexcept;
  BertEncoder& operator=(BertEncoder&&) noexcept;

  const BertConfig& config() const { return config_; }
  const encoder::EncoderInfo& info() const override { return info_; }
  backend::cpu::Precision precision() const { return precision_; }

  // The last hidden states of every sequence, packed: [rows, hidden_size] where the rows of
  // sequences[i] are layout()[i]. Every id must be < vocab_size and every sequence non-empty and at
  // most max_position_embeddings long (std::invalid_argument otherwise). The returned view lives
  // until the next call. Not thread-safe: the encoder's scratch buffers are reused across calls.
  std::span<const float> forward(std::span<const std::span<const int32_t>> sequences) override;
  std::span<const backend::cpu::PackedSequence> layout() const { return layout_; }

 private:
  struct Layer {
    backend::cpu::PackedLinear qkv;
    backend::cpu::PackedLinear attention_output;
    backend::cpu::PackedLinear intermediate;  // GELU fused
    backend::cpu::PackedLinear output;
    std::vector<float> attention_norm_weight, attention_norm_bias;
    std::vector<float> output_norm_weight, output_norm_bias;
  };

  void embed(std::span<const std::span<const int32_t>> sequences, size_t rows);

  BertConfig config_;
  encoder::EncoderInfo info_;
  backend::cpu::Precision precision_;
  std::vector<float> word_embeddings_, position_embeddings_, token_type_embedding_;
  std::vector<float> embedding_norm_weight_, embedding_norm_bias_;
  std::vector<Layer> layers_;

  // Every layer over this thread's share of the `rows` packed rows, `per_thread` of them (the whole
  // forward after embed).
  void run_layers(backend::cpu::Team& team, size_t rows, size_t per_thread);

  // Scratch, reused across calls. qkv_ is double-buffered: a thread may write the next layer's Q/K/V
  // rows while another still reads this layer's keys and values, so one barrier per layer suffices.
  std::vector<backend::cpu::PackedSequence> layout_;
  std::vector<float> hidden_, context_, intermediate_;
  std::vector<float> qkv_[2];
  // bf16: what the matmuls and attention read, written in bf16 by the ops that produce them.
  std::vector<backend::cpu::Bf16Bits> qkv_bf16_[2];
  std::vector<backend::cpu::Bf16Bits> hidden_bf16_, context_bf16_, intermediate_bf16_;
  // bf16 on AMX: each thread lays out its own rows' keys and values before the barrier (double-buffered
  // as qkv_bf16_); empty where StagedKeyValues is not available.
  bool staged_attention_ = false;
  backend::cpu::StagedKeyValues staged_[2];
};

}  // namespace s1::bert
