#include "model/qwen3/qwen3_model.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/cpu/cached_attention.h"
#include "backend/cpu/linear.h"
#include "backend/cpu/rms_norm.h"
#include "backend/cpu/rope.h"
#include "backend/cpu/team.h"
#include "model/checkpoint/checkpoint.h"
#include "model/checkpoint/gguf_config.h"
#include "model/checkpoint/load_error.h"
#include "model/decoder/layer_helpers.h"
#include "model/decoder/matmul_input.h"
#include "model/memory/sequence_memory.h"
#include "model/qwen3/config.h"

namespace s1::qwen3 {
namespace {

using checkpoint::Checkpoint;
using checkpoint::LoadError;

// Resolves checkpoint names: Qwen3ForCausalLM saves "model.layers.…" and "lm_head.weight", a bare
// Qwen3Model "layers.…".
class WeightNames {
 public:
  explicit WeightNames(const Checkpoint& weights) : weights_(weights) {
    if (weights.find("embed_tokens.weight") == nullptr && weights.find("model.embed_tokens.weight") != nullptr) {
      prefix_ = "model.";
    }
  }

  [[nodiscard]] const checkpoint::TensorView& view(const std::string& name,
                                                   std::initializer_list<int64_t> shape) const {
    return weights_.get(prefix_ + name, shape);
  }
  // A copy, after which the tensor's mapped pages need not stay resident.
  [[nodiscard]] std::vector<float> get(const std::string& name, std::initializer_list<int64_t> shape) const {
    return weights_.to_float_released(view(name, shape));
  }

 private:
  const Checkpoint& weights_;
  std::string prefix_;
};

using decoder::rounded_rows;

struct Layer {
  std::vector<float> input_norm;
  backend::cpu::PackedLinear qkv;  // [q heads | k heads | v heads] per row
  std::vector<float> q_norm;
  std::vector<float> k_norm;
  backend::cpu::PackedLinear attention_output;
  std::vector<float> post_attention_norm;
  backend::cpu::PackedLinear gate_up;  // [gate | up] per row
  backend::cpu::PackedLinear down;
};

using decoder::BranchRows;

class Qwen3Decoder final : public decoder::CausalDecoder {
 public:
  // `mapping` stays alive as long as the LM head reads its rows in place from it.
  Qwen3Decoder(const Qwen3Config& config, std::shared_ptr<const Checkpoint> mapping, backend::cpu::Precision precision);

  [[nodiscard]] const decoder::DecoderInfo& info() const override { return info_; }
  [[nodiscard]] const decoder::OutputMatrix& lm_head() const override { return lm_head_; }
  std::vector<decoder::BranchOutput> forward(const memory::SequenceMemory* prefix,
                                             std::span<const decoder::Branch> branches, bool keep_states) override;

 private:
  [[nodiscard]] std::size_t q_width() const { return heads_.q_width(); }
  [[nodiscard]] std::size_t kv_width() const { return heads_.kv_width(); }
  [[nodiscard]] std::size_t qkv_width() const { return heads_.row_width(); }

  // Everything between the q/k/v and the output projection, in one parallel region.
  void attention_block(backend::cpu::Team& team, std::size_t layer_index, const memory::SequenceMemory& prefix,
                       std::span<const BranchRows> rows, std::span<memory::MemoryExtension> extensions);

  Qwen3Config config_;
  decoder::DecoderInfo info_;
  std::size_t hidden_;
  decoder::AttentionHeads heads_;
  std::size_t intermediate_;
  float eps_;
  decoder::OutputMatrix lm_head_;
  std::vector<float> embed_tokens_;  // empty when tied: rows are read from lm_head_
  std::vector<Layer> layers_;
  std::vector<float> final_norm_;
  memory::SequenceMemory empty_;  // the empty sequence, which forward(nullptr, …) continues

  // Scratch reused between calls (the decoder is not thread-safe).
  std::vector<int64_t> positions_;
  backend::cpu::RopeTable rope_;  // angles of positions [0, rope_.positions), grown as prompts need
  std::vector<float> hidden_rows_;
  decoder::MatmulInput normed_;
  std::vector<float> qkv_;
  decoder::MatmulInput context_;  // attention's output, o_proj's input
  decoder::MatmulInput activated_;
  std::vector<float> prefix_keys_;
  std::vector<float> prefix_values_;
  backend::cpu::CachedAttentionWorkspace attention_workspace_;
};

// A bf16 head is read in place from the mapping (kept alive by the decoder), not copied to fp32.
decoder::OutputMatrix make_lm_head(const Qwen3Config& config, const std::shared_ptr<const Checkpoint>& mapping,
                                   const WeightNames& names, backend::cpu::Precision precision) {
  const Checkpoint& weights = *mapping;
  const auto hidden = static_cast<std::size_t>(config.hidden_size);
  if (config.tie_word_embeddings) {
    return decoder::OutputMatrix(names.view("embed_tokens.weight", {config.vocab_size, config.hidden_size}), hidden,
                                 precision, mapping);
  }
  const checkpoint::TensorView* head = weights.find("lm_head.weight");
  if (head == nullptr) {
    throw LoadError(weights.source().string() +
                    ": no tensor 'lm_head.weight' and tie_word_embeddings is false, so the LM head is missing");
  }
  return decoder::OutputMatrix(weights.get("lm_head.weight", {config.vocab_size, config.hidden_size}), hidden,
                               precision, mapping);
}

Qwen3Decoder::Qwen3Decoder(const Qwen3Config& config, std::shared_ptr<const Checkpoint> mapping,
                           backend::cpu::Precision precision)
    : config_(config),
      hidden_(static_cast<std::size_t>(config.hidden_size)),
      heads_{.heads = static_cast<std::size_t>(config.num_attention_heads),
             .kv_heads = static_cast<std::size_t>(config.num_key_value_heads),
             .head_dim = static_cast<std::size_t>(config.head_dim)},
      intermediate_(static_cast<std::size_t>(config.intermediate_size)),
      eps_(static_cast<float>(config.rms_norm_eps)),
      lm_head_(make_lm_head(config, mapping, WeightNames(*mapping), precision)),
      empty_(this, memory::MemoryShape{.attention_layers = static_cast<std::size_t>(config.num_hidden_layers),
                                       .kv_width = heads_.kv_width(),
                                       .recurrent_layers = 0,
                                       .recurrent_size = 0,
                                       .conv_layers = 0,
                                       .conv_tail_size = 0}),
      normed_(precision),
      context_(precision),
      activated_(precision) {
  const Checkpoint& weights = *mapping;
  if (!backend::cpu::linear_supported(precision)) {
    throw LoadError(weights.source().string() + ": bf16 needs a CPU with AVX-512 (AMX preferred); use fp32");
  }
  info_ = decoder::DecoderInfo{.family = "qwen3",
                               .hidden_size = hidden_,
                               .vocab_size = static_cast<std::size_t>(config.vocab_size),
                               .max_positions = static_cast<std::size_t>(config.max_position_embeddings),
                               .prefix_granularity = 1,
                               .precision = precision};
  const WeightNames names(weights);
  if (!config.tie_word_embeddings)
    embed_tokens_ = names.get("embed_tokens.weight", {config.vocab_size, config.hidden_size});
  const int64_t h = config.hidden_size;
  const int64_t q_out = config.num_attention_heads * config.head_dim;
  const int64_t kv_out = config.num_key_value_heads * config.head_dim;
  const int64_t inner = config.intermediate_size;
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
    const std::string layer = "layers." + std::to_string(l) + ".";
    // Q, K and V stacked along the output dimension: one GEMM, and cached_attention reads the
    // queries in place from its rows.
    const auto view = [&](const std::string& name, int64_t rows, int64_t columns) {
      return &names.view(layer + name, {rows, columns});
    };
    layers_.push_back(Layer{
        .input_norm = names.get(layer + "input_layernorm.weight", {h}),
        .qkv = decoder::stacked_projection(weights,
                                           {view("self_attn.q_proj.weight", q_out, h),
                                            view("self_attn.k_proj.weight", kv_out, h),
                                            view("self_attn.v_proj.weight", kv_out, h)},
                                           hidden_, precision),
        .q_norm = names.get(layer + "self_attn.q_norm.weight", {config.head_dim}),
        .k_norm = names.get(layer + "self_attn.k_norm.weight", {config.head_dim}),
        .attention_output =
            decoder::stacked_projection(weights, {view("self_attn.o_proj.weight", h, q_out)}, q_width(), precision),
        .post_attention_norm = names.get(layer + "post_attention_layernorm.weight", {h}),
        .gate_up = decoder::stacked_projection(
            weights, {view("mlp.gate_proj.weight", inner, h), view("mlp.up_proj.weight", inner, h)}, hidden_, precision),
        .down = decoder::stacked_projection(weights, {view("mlp.down_proj.weight", h, inner)}, intermediate_, precision),
    });
  }
  final_norm_ = names.get("norm.weight", {h});
}

void Qwen3Decoder::attention_block(backend::cpu::Team& team, std::size_t layer_index,
                                   const memory::SequenceMemory& prefix, std::span<const BranchRows> rows,
                                   std::span<memory::MemoryExtension> extensions) {
  const Layer& layer = layers_[layer_index];
  const std::size_t qkv_stride = qkv_width();
  const std::size_t width = kv_width();
  const backend::cpu::Team::Range real = team.share(positions_.size());  // this thread's rows (no padding)
  decoder::qk_norm_rope_rows(qkv_, real, heads_, layer.q_norm, layer.k_norm, eps_, positions_, rope_);
  // Each branch's keys and values (after k_norm and RoPE) into its memory extension, from this
  // thread's rows.
  for (std::size_t b = 0; b < extensions.size(); ++b) {
    float* keys = extensions[b].keys(layer_index).data();
    float* values = extensions[b].values(layer_index).data();
    for (std::size_t r = std::max(real.begin, rows[b].offset); r < std::min(real.end, rows[b].offset + rows[b].length);
         ++r) {
      const float* row = qkv_.data() + r * qkv_stride;
      std::copy_n(row + q_width(), width, keys + (r - rows[b].offset) * width);
      std::copy_n(row + q_width() + width, width, values + (r - rows[b].offset) * width);
    }
  }
  // The prefix's keys and values in one block (its segments gathered once per layer, rows shared
  // out); every branch attends to it in place, and to its own rows inside qkv_.
  const std::size_t start = prefix.length();
  if (start > 0) {
    const backend::cpu::Team::Range gathered = team.share(start);
    prefix.gather(layer_index, gathered.begin, gathered.end, prefix_keys_, prefix_values_);
  }
  context_.attention(
      team, attention_workspace_,
      decoder::packed_qkv_attention(qkv_, heads_, prefix_keys_, prefix_values_, start, rows, info_.precision));
}

std::vector<decoder::BranchOutput> Qwen3Decoder::forward(const memory::SequenceMemory* prefix_or_null,
                                                         std::span<const decoder::Branch> branches, bool keep_states) {
  const memory::SequenceMemory& prefix = decoder::prefix_memory(info_, prefix_or_null, empty_);
  const std::size_t start = prefix.length();
  decoder::check_branches(info_, start, branches);
  std::vector<decoder::BranchOutput> outputs(branches.size());
  if (branches.empty()) return outputs;

  const decoder::StackedRows stacked = decoder::stack_rows(branches);
  const std::vector<BranchRows>& rows = stacked.branches;
  const std::size_t padded = rounded_rows(stacked.total);
  positions_.resize(stacked.total);
  hidden_rows_.assign(padded * hidden_, 0.0F);  // padding rows stay finite (zero) through every layer
  if (embed_tokens_.empty()) {
    decoder::embed_rows_from(
        branches, rows, start, [&](std::size_t token, std::span<float> out) { lm_head_.copy_row(token, out); }, hidden_,
        positions_, hidden_rows_);
  } else {
    decoder::embed_rows(branches, rows, start, embed_tokens_, hidden_, positions_, hidden_rows_);
  }
  normed_.resize(padded, hidden_);
  qkv_.resize(padded * qkv_width());
  context_.resize(padded, q_width());
  activated_.resize(padded, intermediate_);
  prefix_keys_.resize(start * kv_width());
  prefix_values_.resize(start * kv_width());
  decoder::cover_positions(rope_, heads_.head_dim, static_cast<float>(config_.rope_theta), start + stacked.longest,
                           info_.max_positions);

  std::vector<memory::MemoryExtension> extensions;
  if (keep_states)
    for (const BranchRows& branch : rows) extensions.emplace_back(empty_.shape(), branch.length);
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const Layer& layer = layers_[l];
    normed_.rms_norm(hidden_rows_, layer.input_norm, eps_);
    normed_.project(layer.qkv, qkv_);
    // QK-norm, RoPE, the K/V cache writes and the attention in one region: under
    // OMP_WAIT_POLICY=passive each region costs a futex wake-up of the other threads
    // (docs/benchmarks/decoder-prefill.md). The matmuls stay oneDNN's own regions: a row split of
    // them inside one team region was no faster (same document).
    backend::cpu::run_team([&](backend::cpu::Team& team) { attention_block(team, l, prefix, rows, extensions); });
    context_.project_accumulate(layer.attention_output, hidden_rows_);
    normed_.rms_norm(hidden_rows_, layer.post_attention_norm, eps_);
    activated_.swiglu_of(normed_, layer.gate_up);
    activated_.project_accumulate(layer.down, hidden_rows_);
  }

  decoder::final_hidden_states(branches, rows, hidden_rows_, hidden_, final_norm_, eps_, outputs);
  for (std::size_t b = 0; b < extensions.size(); ++b) outputs[b].state = prefix.extended(std::move(extensions[b]));
  return outputs;
}

}  // namespace

std::unique_ptr<decoder::CausalDecoder> load_qwen3(const std::filesystem::path& dir,
                                                   backend::cpu::Precision precision) {
  // A GGUF file carries its config in its metadata; a directory has config.json.
  auto weights = std::make_shared<const Checkpoint>(Checkpoint::open(dir));
  const Qwen3Config config = weights->gguf() != nullptr ? read_qwen3_config(checkpoint::gguf_config(*weights->gguf()))
                                                        : read_qwen3_config(dir / "config.json");
  return std::make_unique<Qwen3Decoder>(config, std::move(weights), precision);
}

}  // namespace s1::qwen3
