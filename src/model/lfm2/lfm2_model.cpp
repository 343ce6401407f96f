#include "model/lfm2/lfm2_model.h"

#include <algorithm>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/cpu/cached_attention.h"
#include "backend/cpu/linear.h"
#include "backend/cpu/rms_norm.h"
#include "backend/cpu/rope.h"
#include "backend/cpu/short_conv.h"
#include "backend/cpu/team.h"
#include "model/checkpoint/checkpoint.h"
#include "model/checkpoint/gguf_config.h"
#include "model/checkpoint/load_error.h"
#include "model/decoder/layer_helpers.h"
#include "model/decoder/matmul_input.h"
#include "model/lfm2/config.h"
#include "model/memory/sequence_memory.h"

namespace s1::lfm2 {
namespace {

using backend::cpu::PackedLinear;
using checkpoint::Checkpoint;
using checkpoint::LoadError;
using decoder::concatenate;
using decoder::rounded_rows;

// Resolves checkpoint names (Lfm2ForCausalLM saves "model.layers.…", a bare Lfm2Model "layers.…")
// and records which tensors were read, so that anything left over fails the load instead of being
// silently dropped.
class WeightSource {
 public:
  explicit WeightSource(const Checkpoint& weights) : weights_(weights) {
    if (weights.find("model.embed_tokens.weight") != nullptr) {
      prefix_ = "model.";
    } else if (weights.find("embed_tokens.weight") == nullptr) {
      throw LoadError(weights.source().string() + ": no 'model.embed_tokens.weight' or 'embed_tokens.weight' tensor");
    }
  }

  const checkpoint::TensorView& view_full(const std::string& full_name, std::initializer_list<int64_t> shape) {
    used_.insert(full_name);
    return weights_.get(full_name, shape);
  }
  const checkpoint::TensorView& view(const std::string& name, std::initializer_list<int64_t> shape) {
    return view_full(prefix_ + name, shape);
  }
  // A copy, after which the tensor's mapped pages need not stay resident.
  std::vector<float> get(const std::string& name, std::initializer_list<int64_t> shape) {
    return weights_.to_float_released(view(name, shape));
  }
  std::vector<float> copy(const checkpoint::TensorView& tensor) const { return weights_.to_float_released(tensor); }
  bool has(const std::string& full_name) const { return weights_.find(full_name) != nullptr; }

  void check_all_used() const {
    for (const checkpoint::TensorView& tensor : weights_.tensors()) {
      if (!used_.contains(tensor.name)) {
        throw LoadError(weights_.source().string() + ": unexpected tensor '" + tensor.name +
                        "' (not part of the LFM2 decoder this config describes)");
      }
    }
  }

 private:
  const Checkpoint& weights_;
  std::string prefix_;
  std::set<std::string, std::less<>> used_;
};

struct AttentionWeights {
  PackedLinear qkv;  // [q heads | k heads | v heads] per row
  PackedLinear output;
  std::vector<float> q_norm, k_norm;
};

struct ConvWeights {
  PackedLinear input;  // [B | C | x] per row
  PackedLinear output;
  std::vector<float> kernel;  // [hidden, conv_L_cache]
  std::vector<float> bias;    // [hidden], or empty without conv_bias
};

struct Layer {
  std::size_t slot = 0;  // index among the layers of its kind (state vectors)
  std::vector<float> operator_norm, ffn_norm;
  std::optional<AttentionWeights> attention;
  std::optional<ConvWeights> conv;
  PackedLinear gate_up;  // [w1 (gate) | w3 (up)] per row
  PackedLinear down;     // w2
};

using decoder::BranchRows;

class Lfm2Decoder final : public decoder::CausalDecoder {
 public:
  // `mapping` stays alive as long as the LM head reads its rows in place from it.
  Lfm2Decoder(const Lfm2Config& config, const std::shared_ptr<const Checkpoint>& mapping,
              backend::cpu::Precision precision);

  [[nodiscard]] const decoder::DecoderInfo& info() const override { return info_; }
  [[nodiscard]] const decoder::OutputMatrix& lm_head() const override { return *lm_head_; }
  std::vector<decoder::BranchOutput> forward(const memory::SequenceMemory* prefix,
                                             std::span<const decoder::Branch> branches, bool keep_states) override;

 private:
  [[nodiscard]] std::size_t q_width() const { return heads_.q_width(); }
  [[nodiscard]] std::size_t kv_width() const { return heads_.kv_width(); }
  [[nodiscard]] std::size_t qkv_width() const { return heads_.row_width(); }
  [[nodiscard]] std::size_t conv_history() const { return kernel_ - 1; }

  void attention_layer(const Layer& layer, const memory::SequenceMemory& base, std::span<const BranchRows> rows,
                       std::span<memory::MemoryExtension> extensions);
  void conv_layer(const Layer& layer, const memory::SequenceMemory& base, std::span<const BranchRows> rows,
                  std::span<memory::MemoryExtension> extensions);
  void mlp(const Layer& layer);

  Lfm2Config config_;
  decoder::DecoderInfo info_;
  std::size_t hidden_;
  decoder::AttentionHeads heads_;
  std::size_t intermediate_;
  std::size_t kernel_;
  float eps_;
  std::optional<decoder::OutputMatrix> lm_head_;
  std::vector<float> embeddings_;  // empty when tied: the LM head rows are the table
  std::vector<float> final_norm_;
  std::vector<Layer> layers_;
  std::size_t attention_layers_ = 0;
  std::size_t conv_layers_ = 0;
  memory::SequenceMemory empty_{nullptr, {}};  // the empty sequence, which forward(nullptr, …) continues

  // Scratch reused between calls (the decoder is not thread-safe).
  std::size_t rows_ = 0;  // real rows of the current batch
  std::vector<int64_t> positions_;
  backend::cpu::RopeTable rope_;  // angles of positions [0, rope_.positions), grown as prompts need
  std::vector<float> hidden_rows_, projected_, conv_out_, tail_scratch_;
  std::vector<float> prefix_keys_, prefix_values_;  // a prefix's keys and values held in several segments
  decoder::MatmulInput normed_;
  decoder::MatmulInput context_;  // attention's output, out_proj's input
  decoder::MatmulInput activated_;
  backend::cpu::CachedAttentionWorkspace attention_workspace_;
};

Lfm2Decoder::Lfm2Decoder(const Lfm2Config& config, const std::shared_ptr<const Checkpoint>& mapping,
                         backend::cpu::Precision precision)
    : config_(config),
      hidden_(static_cast<std::size_t>(config.hidden_size)),
      heads_{.heads = static_cast<std::size_t>(config.num_attention_heads),
             .kv_heads = static_cast<std::size_t>(config.num_key_value_heads),
             .head_dim = static_cast<std::size_t>(config.head_dim)},
      intermediate_(static_cast<std::size_t>(config.intermediate_size)),
      kernel_(static_cast<std::size_t>(config.conv_kernel)),
      eps_(static_cast<float>(config.norm_eps)),
      normed_(precision),
      context_(precision),
      activated_(precision) {
  const Checkpoint& weights = *mapping;
  if (!backend::cpu::linear_supported(precision)) {
    throw LoadError(weights.source().string() + ": bf16 needs a CPU with AVX-512 (AMX preferred); use fp32");
  }
  WeightSource source(weights);
  const int64_t h = config.hidden_size;
  const auto& embedding = source.view("embed_tokens.weight", {config.vocab_size, h});
  if (config.tie_word_embeddings) {
    lm_head_.emplace(embedding, hidden_, precision, mapping);
    // A saved lm_head is overwritten by the embedding table when Transformers ties them.
    if (source.has("lm_head.weight")) source.view_full("lm_head.weight", {config.vocab_size, h});
  } else {
    if (!source.has("lm_head.weight")) {
      throw LoadError(weights.source().string() +
                      ": no tensor 'lm_head.weight' and tie_word_embeddings is false, so the LM head is missing");
    }
    lm_head_.emplace(source.view_full("lm_head.weight", {config.vocab_size, h}), hidden_, precision, mapping);
    embeddings_ = source.copy(embedding);
  }
  final_norm_ = source.get("embedding_norm.weight", {h});

  const int64_t q_out = config.num_attention_heads * config.head_dim;
  const int64_t kv_out = config.num_key_value_heads * config.head_dim;
  const int64_t inner = config.intermediate_size;
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
    const std::string layer = "layers." + std::to_string(l) + ".";
    std::optional<AttentionWeights> attention;
    std::optional<ConvWeights> conv;
    std::size_t slot = 0;
    if (config.full_attention[static_cast<std::size_t>(l)]) {
      slot = attention_layers_++;
      const std::string a = layer + "self_attn.";
      const std::vector<float> qkv =
          concatenate({source.get(a + "q_proj.weight", {q_out, h}), source.get(a + "k_proj.weight", {kv_out, h}),
                       source.get(a + "v_proj.weight", {kv_out, h})});
      attention.emplace(AttentionWeights{
          .qkv = PackedLinear(qkv, {}, hidden_, qkv_width(), precision),
          .output = PackedLinear(source.get(a + "out_proj.weight", {h, q_out}), {}, q_width(), hidden_, precision),
          .q_norm = source.get(a + "q_layernorm.weight", {config.head_dim}),
          .k_norm = source.get(a + "k_layernorm.weight", {config.head_dim}),
      });
    } else {
      slot = conv_layers_++;
      const std::string c = layer + "conv.";
      std::vector<float> in_bias, out_bias, conv_bias;
      if (config.conv_bias) {
        in_bias = source.get(c + "in_proj.bias", {3 * h});
        out_bias = source.get(c + "out_proj.bias", {h});
        conv_bias = source.get(c + "conv.bias", {h});
      }
      conv.emplace(ConvWeights{
          .input = PackedLinear(source.get(c + "in_proj.weight", {3 * h, h}), in_bias, hidden_, 3 * hidden_, precision),
          .output = PackedLinear(source.get(c + "out_proj.weight", {h, h}), out_bias, hidden_, hidden_, precision),
          .kernel = source.get(c + "conv.weight", {h, 1, config.conv_kernel}),
          .bias = std::move(conv_bias),
      });
    }
    const std::string m = layer + "feed_forward.";
    const std::vector<float> gate_up =
        concatenate({source.get(m + "w1.weight", {inner, h}), source.get(m + "w3.weight", {inner, h})});
    layers_.push_back(Layer{
        .slot = slot,
        .operator_norm = source.get(layer + "operator_norm.weight", {h}),
        .ffn_norm = source.get(layer + "ffn_norm.weight", {h}),
        .attention = std::move(attention),
        .conv = std::move(conv),
        .gate_up = PackedLinear(gate_up, {}, hidden_, 2 * intermediate_, precision),
        .down = PackedLinear(source.get(m + "w2.weight", {h, inner}), {}, intermediate_, hidden_, precision),
    });
  }
  source.check_all_used();

  info_ = decoder::DecoderInfo{.family = "lfm2",
                               .hidden_size = hidden_,
                               .vocab_size = static_cast<std::size_t>(config.vocab_size),
                               .max_positions = static_cast<std::size_t>(config.max_position_embeddings),
                               .prefix_granularity = 1,
                               .precision = precision};
  empty_ = memory::SequenceMemory(this, memory::MemoryShape{.attention_layers = attention_layers_,
                                                            .kv_width = kv_width(),
                                                            .recurrent_layers = 0,
                                                            .recurrent_size = 0,
                                                            .conv_layers = conv_layers_,
                                                            .conv_tail_size = conv_history() * hidden_});
}

std::vector<decoder::BranchOutput> Lfm2Decoder::forward(const memory::SequenceMemory* prefix,
                                                        std::span<const decoder::Branch> branches, bool keep_states) {
  const memory::SequenceMemory& base = decoder::prefix_memory(info_, prefix, empty_);
  const std::size_t start = base.length();
  decoder::check_branches(info_, start, branches);
  std::vector<decoder::BranchOutput> outputs(branches.size());
  if (branches.empty()) return outputs;

  const decoder::StackedRows stacked = decoder::stack_rows(branches);
  const std::vector<BranchRows>& rows = stacked.branches;
  const std::size_t padded = rounded_rows(stacked.total);
  rows_ = stacked.total;
  positions_.resize(stacked.total);
  hidden_rows_.assign(padded * hidden_, 0.0F);  // padding rows stay finite through every layer
  if (embeddings_.empty()) {
    decoder::embed_rows_from(
        branches, rows, start, [&](std::size_t token, std::span<float> out) { lm_head_->copy_row(token, out); },
        hidden_, positions_, hidden_rows_);
  } else {
    decoder::embed_rows(branches, rows, start, embeddings_, hidden_, positions_, hidden_rows_);
  }
  normed_.resize(padded, hidden_);
  activated_.resize(padded, intermediate_);
  decoder::cover_positions(rope_, heads_.head_dim, static_cast<float>(config_.rope_theta), start + stacked.longest,
                           info_.max_positions);

  std::vector<memory::MemoryExtension> extensions;
  if (keep_states)
    for (const BranchRows& branch : rows) extensions.emplace_back(empty_.shape(), branch.length);

  for (const Layer& layer : layers_) {
    normed_.rms_norm(hidden_rows_, layer.operator_norm, eps_);
    if (layer.attention) {
      attention_layer(layer, base, rows, extensions);
    } else {
      conv_layer(layer, base, rows, extensions);
    }
    mlp(layer);
  }

  decoder::final_hidden_states(branches, rows, hidden_rows_, hidden_, final_norm_, eps_, outputs);
  for (std::size_t b = 0; b < extensions.size(); ++b) outputs[b].state = base.extended(std::move(extensions[b]));
  return outputs;
}

void Lfm2Decoder::attention_layer(const Layer& layer, const memory::SequenceMemory& base,
                                  std::span<const BranchRows> rows, std::span<memory::MemoryExtension> extensions) {
  const AttentionWeights& weights = *layer.attention;
  const std::size_t padded = hidden_rows_.size() / hidden_;
  const std::size_t stride = qkv_width();
  projected_.resize(padded * stride);
  normed_.project(weights.qkv, projected_);
  const std::size_t start = base.length();
  const std::size_t width = kv_width();
  // Every branch attends to the prefix's keys (in place when one segment holds them) and to its own
  // rows inside projected_.
  const memory::SequenceMemory::KeyValues prefix = base.key_values(layer.slot, prefix_keys_, prefix_values_);
  context_.resize(padded, q_width());
  // QK-norm, RoPE and the attention in one parallel region (one pool wake-up, not two).
  backend::cpu::run_team([&](backend::cpu::Team& team) {
    decoder::qk_norm_rope_rows(projected_, team.share(rows_), heads_, weights.q_norm, weights.k_norm, eps_, positions_,
                               rope_);
    context_.attention(
        team, attention_workspace_,
        decoder::packed_qkv_attention(projected_, heads_, prefix.keys, prefix.values, start, rows, info_.precision));
  });
  for (std::size_t b = 0; b < extensions.size(); ++b) {
    const std::span<float> keys = extensions[b].keys(layer.slot);
    const std::span<float> values = extensions[b].values(layer.slot);
    for (std::size_t t = 0; t < rows[b].length; ++t) {
      const float* row = projected_.data() + (rows[b].offset + t) * stride;
      std::copy_n(row + q_width(), width, keys.begin() + static_cast<std::ptrdiff_t>(t * width));
      std::copy_n(row + q_width() + width, width, values.begin() + static_cast<std::ptrdiff_t>(t * width));
    }
  }
  context_.project_accumulate(weights.output, hidden_rows_);
}

void Lfm2Decoder::conv_layer(const Layer& layer, const memory::SequenceMemory& base, std::span<const BranchRows> rows,
                             std::span<memory::MemoryExtension> extensions) {
  const ConvWeights& weights = *layer.conv;
  const std::size_t padded = hidden_rows_.size() / hidden_;
  const std::size_t stride = 3 * hidden_;
  projected_.resize(padded * stride);
  normed_.project(weights.input, projected_);
  conv_out_.assign(padded * hidden_, 0.0F);
  tail_scratch_.resize(conv_history() * hidden_);
  for (std::size_t b = 0; b < rows.size(); ++b) {
    // The conv advances its tail in place: each branch starts from its own copy of the prefix's.
    const std::span<float> tail =
        extensions.empty() ? std::span<float>(tail_scratch_) : extensions[b].conv_tail(layer.slot);
    std::ranges::copy(base.conv_tail(layer.slot), tail.begin());
    backend::cpu::gated_short_conv(
        std::span<const float>(projected_).subspan(rows[b].offset * stride), rows[b].length, weights.kernel, kernel_,
        weights.bias, tail, std::span<float>(conv_out_).subspan(rows[b].offset * hidden_, rows[b].length * hidden_));
  }
  weights.output.forward_accumulate(conv_out_, hidden_rows_);
}

void Lfm2Decoder::mlp(const Layer& layer) {
  normed_.rms_norm(hidden_rows_, layer.ffn_norm, eps_);
  activated_.swiglu_of(normed_, layer.gate_up);
  activated_.project_accumulate(layer.down, hidden_rows_);
}

}  // namespace

std::unique_ptr<decoder::CausalDecoder> load_lfm2(const std::filesystem::path& dir, backend::cpu::Precision precision) {
  // A GGUF file carries its config in its metadata; a directory has config.json.
  const auto weights = std::make_shared<const Checkpoint>(Checkpoint::open(dir));
  const Lfm2Config config = weights->gguf() != nullptr ? read_lfm2_config(checkpoint::gguf_config(*weights->gguf()))
                                                       : read_lfm2_config(dir / "config.json");
  return std::make_unique<Lfm2Decoder>(config, weights, precision);
}

}  // namespace s1::lfm2
