#include "model/qwen3_5/qwen3_5_model.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/cached_attention.h"
#include "backend/cpu/gated_delta.h"
#include "backend/cpu/linear.h"
#include "backend/cpu/parallel.h"
#include "backend/cpu/rms_norm.h"
#include "backend/cpu/rope.h"
#include "model/checkpoint/checkpoint.h"
#include "model/checkpoint/gguf_config.h"
#include "model/checkpoint/load_error.h"
#include "model/decoder/grid_positions.h"
#include "model/decoder/layer_helpers.h"
#include "model/decoder/lora_adapter.h"
#include "model/decoder/matmul_input.h"
#include "model/memory/sequence_memory.h"
#include "model/qwen3_5/config.h"

namespace s1::qwen3_5 {
namespace {

using backend::cpu::PackedLinear;
using checkpoint::Checkpoint;
using checkpoint::LoadError;

// Transformers' chunked delta rule works in chunks of 64 tokens counted from the sequence start;
// prefixes that end on this grid reproduce the unshared forward's rounding most closely.
constexpr std::size_t delta_chunk = 64;
// Transformers' l2norm epsilon for GDN queries and keys (fixed, not rms_norm_eps).
constexpr float qk_l2_eps = 1e-6F;

// Resolves checkpoint names under the text model's prefix and records which tensors were used, so
// that anything left over (a bias, a MoE expert) fails the load instead of being silently dropped.
class WeightSource {
 public:
  explicit WeightSource(const Checkpoint& weights) : weights_(weights) {
    for (const char* candidate : {"model.language_model.", "model.", "language_model."}) {
      if (weights.find(std::string(candidate) + "embed_tokens.weight") != nullptr) {
        prefix_ = candidate;
        return;
      }
    }
    throw LoadError(weights.source().string() +
                    ": no 'model.language_model.embed_tokens.weight', 'model.embed_tokens.weight' or "
                    "'language_model.embed_tokens.weight' tensor");
  }

  const checkpoint::TensorView& view(const std::string& full_name, std::initializer_list<int64_t> shape) {
    used_.insert(full_name);
    return weights_.get(full_name, shape);
  }
  // A copy, after which the tensor's mapped pages need not stay resident.
  std::vector<float> get(const std::string& name, std::initializer_list<int64_t> shape) {
    return weights_.to_float_released(view(prefix_ + name, shape));
  }
  std::vector<float> copy(const checkpoint::TensorView& tensor) const { return weights_.to_float_released(tensor); }
  // The zero-centred RMSNorm weight w as the plain weight 1 + w (computed in fp32 as Transformers does).
  std::vector<float> zero_centred_norm(const std::string& name, int64_t width) {
    std::vector<float> weight = get(name, {width});
    for (float& w : weight) w = 1.0F + w;
    return weight;
  }
  bool has_lm_head() const { return weights_.find("lm_head.weight") != nullptr; }
  const std::string& prefix() const { return prefix_; }

  // Multi-token-prediction weights are never used by a forward pass; vision weights belong to the
  // multimodal front end. Everything else must have been read.
  void check_all_used() const {
    std::size_t vision = 0;
    for (const checkpoint::TensorView& tensor : weights_.tensors()) {
      if (used_.contains(tensor.name) || tensor.name.starts_with("mtp.")) continue;
      if (tensor.name.starts_with("model.visual.") || tensor.name.starts_with("visual.")) {
        ++vision;
        continue;
      }
      throw LoadError(weights_.source().string() + ": unexpected tensor '" + tensor.name +
                      "' (not part of the Qwen3.5 text decoder)");
    }
    if (vision > 0) {
      spdlog::info("{}: loading the text decoder only; {} vision tensors skipped", weights_.source().string(), vision);
    }
  }

 private:
  const Checkpoint& weights_;
  std::string prefix_;
  std::set<std::string, std::less<>> used_;
};

struct AttentionWeights {
  PackedLinear qkv;  // [q/gate interleaved per head (heads·2·head_dim) | k | v]
  PackedLinear output;
  std::vector<float> q_norm, k_norm;  // 1 + w
};

struct DeltaNetWeights {
  PackedLinear input;  // [qkv (conv channels) | z (value_dim) | b (v_heads) | a (v_heads)]
  PackedLinear output;
  std::vector<float> conv;        // [conv channels, kernel]
  std::vector<float> negative_a;  // −exp(A_log) per value head
  std::vector<float> dt_bias;     // per value head
  std::vector<float> norm;        // gated RMSNorm weight (plain)
};

struct Layer {
  std::size_t slot = 0;  // index among the layers of its kind (state vectors)
  std::vector<float> input_norm, post_norm;
  std::optional<AttentionWeights> attention;
  std::optional<DeltaNetWeights> delta;
  PackedLinear gate_up;  // [gate | up] per row
  PackedLinear down;
};

// An unmerged LoRA adapter's low-rank terms for one layer's projections (absent when not adapted).
struct LayerLora {
  std::optional<decoder::LowRankDelta> mixer_input, mixer_output, gate_up, down;
};

void add_low_rank(const std::optional<decoder::LowRankDelta>& delta, std::span<const float> x, std::span<float> y) {
  if (delta) delta->add_to(x, y);
}

using decoder::BranchRows;

class Qwen35Decoder final : public decoder::CausalDecoder {
 public:
  // `mapping` stays alive as long as the LM head reads its rows in place from it.
  Qwen35Decoder(const Qwen35Config& config, const std::shared_ptr<const Checkpoint>& mapping,
                backend::cpu::Precision precision, bool noncausal_full_attention, OutputHead head,
                const decoder::LoraAdapter* lora);

  [[nodiscard]] const decoder::DecoderInfo& info() const override { return info_; }
  [[nodiscard]] const decoder::OutputMatrix& lm_head() const override {
    if (!lm_head_) throw std::logic_error("qwen3_5: a headless backbone has no LM head");
    return *lm_head_;
  }
  std::vector<decoder::BranchOutput> forward(const memory::SequenceMemory* prefix,
                                             std::span<const decoder::Branch> branches, bool keep_states) override;

 private:
  const memory::SequenceMemory& checked_prefix(const memory::SequenceMemory* prefix) const;
  void attention_layer(const Layer& layer, const memory::SequenceMemory& base, std::span<const BranchRows> rows,
                       std::span<memory::MemoryExtension> extensions);
  void delta_layer(const Layer& layer, const memory::SequenceMemory& base, std::span<const BranchRows> rows,
                   std::span<memory::MemoryExtension> extensions);

  [[nodiscard]] std::size_t hidden() const { return static_cast<std::size_t>(config_.hidden_size); }
  [[nodiscard]] std::size_t key_dim() const {
    return static_cast<std::size_t>(config_.linear_num_key_heads * config_.linear_key_head_dim);
  }
  [[nodiscard]] std::size_t value_dim() const {
    return static_cast<std::size_t>(config_.linear_num_value_heads * config_.linear_value_head_dim);
  }
  [[nodiscard]] std::size_t conv_channels() const { return 2 * key_dim() + value_dim(); }
  [[nodiscard]] const LayerLora* lora_of(const Layer& layer) const {
    return loras_.empty() ? nullptr : &loras_[static_cast<std::size_t>(&layer - layers_.data())];
  }
  [[nodiscard]] std::size_t conv_history() const {
    return static_cast<std::size_t>(config_.linear_conv_kernel_dim) - 1;
  }

  Qwen35Config config_;
  decoder::DecoderInfo info_;
  bool noncausal_;
  std::optional<decoder::OutputMatrix> lm_head_;
  std::vector<float> embeddings_;  // empty when tied with an LM head: the LM head rows are the table
  std::vector<float> final_norm_;
  std::vector<Layer> layers_;
  std::vector<LayerLora> loras_;  // per layer; empty without an adapter
  std::size_t attention_layers_ = 0;
  std::size_t delta_layers_ = 0;
  memory::SequenceMemory empty_{nullptr, {}};  // the empty sequence, which forward(nullptr, …) continues
  std::vector<uint8_t> mrope_axes_;            // per rotary frequency: 0 temporal, 1 height, 2 width

  // Scratch reused across calls (forward is not thread-safe).
  std::size_t rows_ = 0;  // real rows of the current batch
  std::vector<float> hidden_;
  std::vector<float> gate_up_;  // fp32 [gate | up] rows, with an adapter (its low-rank terms add to them)
  // The matmuls' inputs: bf16 written by the norms and SwiGLU for a bf16 model without an adapter
  // (the adapter's low-rank terms read fp32 rows).
  decoder::MatmulInput normed_, activated_, mixed_;  // mixed_: the GDN output, out_proj's input
  std::vector<int64_t> positions_;  // [3][rows]: each row's temporal, height and width position
  std::vector<float> projected_, queries_, keys_, values_, context_;
  std::vector<float> conv_out_, delta_q_, delta_k_, g_, beta_, core_, z_;
  std::vector<float> tail_scratch_, recurrent_scratch_;  // a branch's conv tail and state when none is kept
  std::vector<float> prefix_keys_, prefix_values_;       // a prefix's keys and values held in several segments
};

Qwen35Decoder::Qwen35Decoder(const Qwen35Config& config, const std::shared_ptr<const Checkpoint>& mapping,
                             backend::cpu::Precision precision, bool noncausal_full_attention, OutputHead head,
                             const decoder::LoraAdapter* lora)
    : config_(config),
      noncausal_(noncausal_full_attention),
      normed_(lora == nullptr ? precision : backend::cpu::Precision::fp32),
      activated_(lora == nullptr ? precision : backend::cpu::Precision::fp32),
      mixed_(lora == nullptr ? precision : backend::cpu::Precision::fp32) {
  const Checkpoint& weights = *mapping;
  if (!backend::cpu::linear_supported(precision)) {
    throw LoadError(weights.source().string() + ": bf16 needs a CPU with AVX-512 (AMX preferred); use fp32");
  }
  WeightSource source(weights);
  const int64_t h = config.hidden_size;
  const int64_t inner = config.intermediate_size;
  const auto hs = static_cast<std::size_t>(h);
  const auto is = static_cast<std::size_t>(inner);

  const auto& embed_view = source.view(source.prefix() + "embed_tokens.weight", {config.vocab_size, h});
  if (head == OutputHead::none) {
    // A saved lm_head.weight is left unread, so check_all_used() refuses it.
    embeddings_ = source.copy(embed_view);
  } else if (config.tie_word_embeddings) {
    lm_head_.emplace(embed_view, hs, precision, mapping);
    // Transformers overwrites a saved lm_head with the embedding table when tied.
    if (source.has_lm_head()) source.view("lm_head.weight", {config.vocab_size, h});
  } else {
    if (!source.has_lm_head()) {
      throw LoadError(weights.source().string() + ": untied checkpoint without 'lm_head.weight'");
    }
    lm_head_.emplace(source.view("lm_head.weight", {config.vocab_size, h}), hs, precision, mapping);
    embeddings_ = source.copy(embed_view);
  }
  final_norm_ = source.zero_centred_norm("norm.weight", h);

  const int64_t heads = config.num_attention_heads;
  const int64_t kv_heads = config.num_key_value_heads;
  const int64_t head_dim = config.head_dim;
  const auto value_width = static_cast<int64_t>(value_dim());
  const auto channels = static_cast<int64_t>(conv_channels());
  const int64_t v_heads = config.linear_num_value_heads;
  // Matrices that may stay quantised (a GGUF file's Q8_0 or Q4_K), read by stacked_projection.
  const auto view = [&](const std::string& name, int64_t rows, int64_t columns) -> const checkpoint::TensorView& {
    return source.view(source.prefix() + name, {rows, columns});
  };
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
    const std::string layer = "layers." + std::to_string(l) + ".";
    std::optional<AttentionWeights> attention;
    std::optional<DeltaNetWeights> delta;
    std::size_t slot = 0;
    if (config.full_attention[static_cast<std::size_t>(l)]) {
      slot = attention_layers_++;
      const std::string a = layer + "self_attn.";
      attention.emplace(AttentionWeights{
          decoder::stacked_projection(weights,
                                      {&view(a + "q_proj.weight", heads * head_dim * 2, h),
                                       &view(a + "k_proj.weight", kv_heads * head_dim, h),
                                       &view(a + "v_proj.weight", kv_heads * head_dim, h)},
                                      hs, precision),
          decoder::stacked_projection(weights, {&view(a + "o_proj.weight", h, heads * head_dim)},
                                      static_cast<std::size_t>(heads * head_dim), precision),
          source.zero_centred_norm(a + "q_norm.weight", head_dim),
          source.zero_centred_norm(a + "k_norm.weight", head_dim),
      });
    } else {
      slot = delta_layers_++;
      const std::string d = layer + "linear_attn.";
      const auto qkv = source.get(d + "in_proj_qkv.weight", {channels, h});
      const auto z = source.get(d + "in_proj_z.weight", {value_width, h});
      const auto b = source.get(d + "in_proj_b.weight", {v_heads, h});
      const auto a = source.get(d + "in_proj_a.weight", {v_heads, h});
      const auto out = source.get(d + "out_proj.weight", {h, value_width});
      std::vector<float> negative_a = source.get(d + "A_log", {v_heads});
      for (float& value : negative_a) value = -std::exp(value);
      const auto input_rows = static_cast<std::size_t>(channels + value_width + 2 * v_heads);
      delta.emplace(DeltaNetWeights{
          PackedLinear(decoder::concatenate({qkv, z, b, a}), {}, hs, input_rows, precision),
          PackedLinear(out, {}, static_cast<std::size_t>(value_width), hs, precision),
          source.get(d + "conv1d.weight", {channels, 1, config.linear_conv_kernel_dim}),
          std::move(negative_a),
          source.get(d + "dt_bias", {v_heads}),
          source.get(d + "norm.weight", {config.linear_value_head_dim}),
      });
    }
    const std::string m = layer + "mlp.";
    if (lora != nullptr) {
      const std::string& p = source.prefix();
      const auto low_rank = [&](std::initializer_list<decoder::LowRankDelta::Part> parts, int64_t in,
                                const std::string& what) {
        return decoder::LowRankDelta::make(std::vector<decoder::LowRankDelta::Part>(parts),
                                           static_cast<std::size_t>(in), lora->scale(),
                                           weights.source().string() + ": " + p + what);
      };
      const auto part = [&](const std::string& name, int64_t rows) {
        return decoder::LowRankDelta::Part{static_cast<std::size_t>(rows), lora->take(p + name)};
      };
      LayerLora adapted;
      if (attention) {
        const std::string a = layer + "self_attn.";
        adapted.mixer_input =
            low_rank({part(a + "q_proj.weight", heads * head_dim * 2), part(a + "k_proj.weight", kv_heads * head_dim),
                      part(a + "v_proj.weight", kv_heads * head_dim)},
                     h, a + "q/k/v_proj");
        adapted.mixer_output = low_rank({part(a + "o_proj.weight", h)}, heads * head_dim, a + "o_proj");
      } else {
        const std::string d = layer + "linear_attn.";
        adapted.mixer_input =
            low_rank({part(d + "in_proj_qkv.weight", channels), part(d + "in_proj_z.weight", value_width),
                      part(d + "in_proj_b.weight", v_heads), part(d + "in_proj_a.weight", v_heads)},
                     h, d + "in_proj_*");
        adapted.mixer_output = low_rank({part(d + "out_proj.weight", h)}, value_width, d + "out_proj");
      }
      adapted.gate_up =
          low_rank({part(m + "gate_proj.weight", inner), part(m + "up_proj.weight", inner)}, h, m + "gate/up_proj");
      adapted.down = low_rank({part(m + "down_proj.weight", h)}, inner, m + "down_proj");
      loras_.push_back(std::move(adapted));
    }
    layers_.push_back(Layer{
        slot,
        source.zero_centred_norm(layer + "input_layernorm.weight", h),
        source.zero_centred_norm(layer + "post_attention_layernorm.weight", h),
        std::move(attention),
        std::move(delta),
        decoder::stacked_projection(
            weights, {&view(m + "gate_proj.weight", inner, h), &view(m + "up_proj.weight", inner, h)}, hs, precision),
        decoder::stacked_projection(weights, {&view(m + "down_proj.weight", h, inner)}, is, precision),
    });
  }
  source.check_all_used();
  if (lora != nullptr) lora->check_all_taken();

  info_.family = "qwen3_5";
  info_.hidden_size = hs;
  info_.vocab_size = static_cast<std::size_t>(config.vocab_size);
  info_.max_positions = static_cast<std::size_t>(config.max_position_embeddings);
  info_.prefix_granularity = delta_chunk;
  info_.precision = precision;
  info_.image_token_id = static_cast<int32_t>(config.image_token_id);
  // Transformers' recomposition_frequencies: frequency j takes the height position at j ≡ 1 (mod 3)
  // below 3·section[1], the width position at j ≡ 2 below 3·section[2], the temporal one elsewhere.
  const auto half = static_cast<std::size_t>(config.rotary_dim / 2);
  for (std::size_t j = 0; j < half; ++j) {
    const bool height = j % 3 == 1 && j < 3 * static_cast<std::size_t>(config.mrope_section[1]);
    const bool width = j % 3 == 2 && j < 3 * static_cast<std::size_t>(config.mrope_section[2]);
    mrope_axes_.push_back(height ? 1 : width ? 2 : 0);
  }
  empty_ = memory::SequenceMemory(
      this, memory::MemoryShape{
                .attention_layers = attention_layers_,
                .kv_width = static_cast<std::size_t>(config.num_key_value_heads * config.head_dim),
                .recurrent_layers = delta_layers_,
                .recurrent_size =
                    static_cast<std::size_t>(v_heads * config.linear_key_head_dim * config.linear_value_head_dim),
                .conv_layers = delta_layers_,
                .conv_tail_size = conv_history() * conv_channels(),
            });
}

const memory::SequenceMemory& Qwen35Decoder::checked_prefix(const memory::SequenceMemory* prefix) const {
  if (prefix != nullptr && noncausal_) {
    throw std::invalid_argument(
        "qwen3_5: noncausal full attention makes earlier positions depend on later tokens; a prefix state cannot be "
        "reused");
  }
  return decoder::prefix_memory(info_, prefix, empty_);
}

std::vector<decoder::BranchOutput> Qwen35Decoder::forward(const memory::SequenceMemory* prefix,
                                                          std::span<const decoder::Branch> branches, bool keep_states) {
  const memory::SequenceMemory& base = checked_prefix(prefix);
  const std::size_t start = base.length();
  decoder::check_branches(info_, start, branches);
  const decoder::StackedRows stacked = decoder::stack_rows(branches);
  const std::vector<BranchRows>& rows = stacked.branches;
  if (stacked.total == 0) return {};

  const std::size_t width = hidden();
  const std::size_t padded = backend::cpu::padded_row_count(stacked.total);
  const std::size_t total = stacked.total;
  rows_ = total;
  hidden_.assign(padded * width, 0.0F);
  // The embeddings write 1-D positions into the first block, which the 3-D ones then replace.
  positions_.resize(3 * total);
  const std::span<int64_t> scratch_positions = std::span(positions_).first(total);
  if (embeddings_.empty()) {
    decoder::embed_rows_from(
        branches, rows, start, [&](std::size_t token, std::span<float> out) { lm_head_->copy_row(token, out); }, width,
        scratch_positions, hidden_);
  } else {
    decoder::embed_rows(branches, rows, start, embeddings_, width, scratch_positions, hidden_);
  }

  // Images replace their placeholders' embeddings and lie on their grids (M-RoPE); text after the
  // prefix starts at its next position, which images before it may have made smaller than its length.
  std::vector<memory::MemoryExtension> extensions;
  const auto start_position = static_cast<int64_t>(base.next_position());
  for (std::size_t b = 0; b < branches.size(); ++b) {
    for (const decoder::ImageRows& image : branches[b].images) {
      std::ranges::copy(image.rows, hidden_.begin() + static_cast<std::ptrdiff_t>((rows[b].offset + image.first) * width));
    }
    const decoder::GridPositions grid = decoder::grid_positions(rows[b].length, branches[b].images, start_position);
    for (const auto& [axis, values] : {std::pair{0, &grid.t}, {1, &grid.h}, {2, &grid.w}}) {
      std::ranges::copy(*values, positions_.begin() + static_cast<std::ptrdiff_t>(axis * total + rows[b].offset));
    }
    if (keep_states) {
      extensions.emplace_back(empty_.shape(), rows[b].length);
      extensions.back().set_position_advance(static_cast<std::size_t>(grid.next - start_position));
    }
  }

  const auto eps = static_cast<float>(config_.rms_norm_eps);
  const auto inner = static_cast<std::size_t>(config_.intermediate_size);
  normed_.resize(padded, width);
  activated_.resize(padded, inner);
  mixed_.resize(padded, value_dim());
  for (const Layer& layer : layers_) {
    normed_.rms_norm(hidden_, layer.input_norm, eps);
    if (layer.attention) {
      attention_layer(layer, base, rows, extensions);
    } else {
      delta_layer(layer, base, rows, extensions);
    }
    normed_.rms_norm(hidden_, layer.post_norm, eps);
    const LayerLora* lora = lora_of(layer);
    if (lora != nullptr) {
      gate_up_.resize(padded * 2 * inner);
      normed_.project(layer.gate_up, gate_up_);
      add_low_rank(lora->gate_up, normed_.fp32(), gate_up_);
      activated_.swiglu(gate_up_);
    } else {
      activated_.swiglu_of(normed_, layer.gate_up);
    }
    activated_.project_accumulate(layer.down, hidden_);
    if (lora != nullptr) add_low_rank(lora->down, activated_.fp32(), hidden_);
  }

  std::vector<decoder::BranchOutput> outputs(branches.size());
  decoder::final_hidden_states(branches, rows, hidden_, width, final_norm_, eps, outputs);
  for (std::size_t b = 0; b < extensions.size(); ++b) outputs[b].state = base.extended(std::move(extensions[b]));
  return outputs;
}

void Qwen35Decoder::attention_layer(const Layer& layer, const memory::SequenceMemory& base,
                                    std::span<const BranchRows> rows, std::span<memory::MemoryExtension> extensions) {
  const AttentionWeights& weights = *layer.attention;
  const auto heads = static_cast<std::size_t>(config_.num_attention_heads);
  const auto kv_heads = static_cast<std::size_t>(config_.num_key_value_heads);
  const auto head_dim = static_cast<std::size_t>(config_.head_dim);
  const auto rotary = static_cast<std::size_t>(config_.rotary_dim);
  const auto theta = static_cast<float>(config_.rope_theta);
  const auto eps = static_cast<float>(config_.rms_norm_eps);
  const std::size_t q_width = heads * head_dim;
  const std::size_t kv_width = kv_heads * head_dim;
  const std::size_t stride = 2 * q_width + 2 * kv_width;
  const std::size_t padded = hidden_.size() / hidden();
  const std::size_t total = rows_;

  projected_.resize(padded * stride);
  normed_.project(weights.qkv, projected_);
  if (const LayerLora* lora = lora_of(layer)) add_low_rank(lora->mixer_input, normed_.fp32(), projected_);
  // q_proj interleaves per head: [query (head_dim) | output gate (head_dim)].
  queries_.resize(total * q_width);
  keys_.resize(total * kv_width);
  values_.resize(total * kv_width);
  backend::cpu::parallel_for(total, 16, [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) {
      const float* in = projected_.data() + r * stride;
      for (std::size_t h = 0; h < heads; ++h) {
        std::copy_n(in + h * 2 * head_dim, head_dim, queries_.data() + r * q_width + h * head_dim);
      }
      std::copy_n(in + 2 * q_width, kv_width, keys_.data() + r * kv_width);
      std::copy_n(in + 2 * q_width + kv_width, kv_width, values_.data() + r * kv_width);
    }
  });
  backend::cpu::rms_norm(queries_, weights.q_norm, eps, queries_);
  backend::cpu::rms_norm(keys_, weights.k_norm, eps, keys_);
  backend::cpu::apply_mrope(queries_, total, q_width, heads, head_dim, rotary, mrope_axes_, positions_, theta);
  backend::cpu::apply_mrope(keys_, total, kv_width, kv_heads, head_dim, rotary, mrope_axes_, positions_, theta);

  const std::size_t start = base.length();
  const backend::cpu::CachedAttentionShape shape{
      .heads = heads,
      .kv_heads = kv_heads,
      .head_dim = head_dim,
      .scale = 1.0F / std::sqrt(static_cast<float>(head_dim)),
      .precision = info_.precision,
  };
  // Every branch attends to the prefix's keys (in place when one segment holds them) and to its own
  // rows of keys_/values_.
  const memory::SequenceMemory::KeyValues prefix = base.key_values(layer.slot, prefix_keys_, prefix_values_);
  context_.assign(padded * q_width, 0.0F);
  backend::cpu::cached_attention_branches(queries_, q_width, prefix.keys, prefix.values, start, keys_, values_,
                                          kv_width, rows, !noncausal_, shape, context_);
  for (std::size_t b = 0; b < extensions.size(); ++b) {
    const auto first = static_cast<std::ptrdiff_t>(rows[b].offset * kv_width);
    const auto count = static_cast<std::ptrdiff_t>(rows[b].length * kv_width);
    std::copy_n(keys_.begin() + first, count, extensions[b].keys(layer.slot).begin());
    std::copy_n(values_.begin() + first, count, extensions[b].values(layer.slot).begin());
  }
  backend::cpu::parallel_for(total, 16, [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) {
      const float* gate = projected_.data() + r * stride;
      float* out = context_.data() + r * q_width;
      for (std::size_t h = 0; h < heads; ++h) {
        for (std::size_t d = 0; d < head_dim; ++d) {
          const float g = gate[h * 2 * head_dim + head_dim + d];
          out[h * head_dim + d] *= 1.0F / (1.0F + std::exp(-g));
        }
      }
    }
  });
  weights.output.forward_accumulate(context_, hidden_);
  if (const LayerLora* lora = lora_of(layer)) add_low_rank(lora->mixer_output, context_, hidden_);
}

void Qwen35Decoder::delta_layer(const Layer& layer, const memory::SequenceMemory& base,
                                std::span<const BranchRows> rows, std::span<memory::MemoryExtension> extensions) {
  const DeltaNetWeights& weights = *layer.delta;
  const backend::cpu::GatedDeltaShape shape{
      .k_heads = static_cast<std::size_t>(config_.linear_num_key_heads),
      .v_heads = static_cast<std::size_t>(config_.linear_num_value_heads),
      .k_dim = static_cast<std::size_t>(config_.linear_key_head_dim),
      .v_dim = static_cast<std::size_t>(config_.linear_value_head_dim),
  };
  const std::size_t keys = key_dim();
  const std::size_t values = value_dim();
  const std::size_t channels = conv_channels();
  const std::size_t history = conv_history();
  const auto kernel = static_cast<std::size_t>(config_.linear_conv_kernel_dim);
  const std::size_t stride = channels + values + 2 * shape.v_heads;
  const std::size_t padded = hidden_.size() / hidden();
  const std::size_t total = rows_;
  const std::size_t start = base.length();

  projected_.resize(padded * stride);
  normed_.project(weights.input, projected_);
  if (const LayerLora* lora = lora_of(layer)) add_low_rank(lora->mixer_input, normed_.fp32(), projected_);

  conv_out_.resize(total * channels);
  tail_scratch_.resize(history * channels);
  for (std::size_t b = 0; b < rows.size(); ++b) {
    // The conv advances its tail in place: each branch starts from its own copy of the prefix's.
    const std::span<float> tail =
        extensions.empty() ? std::span<float>(tail_scratch_) : extensions[b].conv_tail(layer.slot);
    std::ranges::copy(base.conv_tail(layer.slot), tail.begin());
    backend::cpu::causal_conv1d_silu(
        std::span<const float>(projected_).subspan(rows[b].offset * stride), rows[b].length, stride, weights.conv,
        kernel, tail, std::span<float>(conv_out_).subspan(rows[b].offset * channels, rows[b].length * channels));
  }

  delta_q_.resize(total * keys);
  delta_k_.resize(total * keys);
  g_.resize(total * shape.v_heads);
  beta_.resize(total * shape.v_heads);
  z_.resize(total * values);
  backend::cpu::parallel_for(total, 16, [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) {
      const float* conv = conv_out_.data() + r * channels;
      std::copy_n(conv, keys, delta_q_.data() + r * keys);
      std::copy_n(conv + keys, keys, delta_k_.data() + r * keys);
      const float* in = projected_.data() + r * stride;
      std::copy_n(in + channels, values, z_.data() + r * values);
      for (std::size_t h = 0; h < shape.v_heads; ++h) {
        const float b = in[channels + values + h];
        const float a = in[channels + values + shape.v_heads + h] + weights.dt_bias[h];
        // torch's softplus (threshold 20: linear above it), then −exp(A_log) · softplus, in fp32.
        const float softplus = a > 20.0F ? a : static_cast<float>(std::log1p(std::exp(static_cast<double>(a))));
        beta_[r * shape.v_heads + h] = 1.0F / (1.0F + std::exp(-b));
        g_[r * shape.v_heads + h] = weights.negative_a[h] * softplus;
      }
    }
  });
  backend::cpu::l2_norm_scaled(delta_q_, shape.k_dim, qk_l2_eps, 1.0F / std::sqrt(static_cast<float>(shape.k_dim)),
                               delta_q_);
  backend::cpu::l2_norm_scaled(delta_k_, shape.k_dim, qk_l2_eps, 1.0F, delta_k_);

  core_.resize(total * values);
  // Every branch reads the prefix's recurrent state in place and writes the state after its own
  // rows to its output state (or to scratch when none is kept): no per-branch copy of the prefix's.
  const std::size_t state_size = shape.v_heads * shape.k_dim * shape.v_dim;
  const std::span<const float> initial = base.recurrent(layer.slot);
  recurrent_scratch_.resize(state_size);
  for (std::size_t b = 0; b < rows.size(); ++b) {
    const std::span<float> state =
        extensions.empty() ? std::span<float>(recurrent_scratch_) : extensions[b].recurrent(layer.slot);
    const std::size_t offset = rows[b].offset;
    const std::size_t length = rows[b].length;
    const backend::cpu::GatedDeltaInputs inputs{
        .query = std::span<const float>(delta_q_).subspan(offset * keys, length * keys),
        .key = std::span<const float>(delta_k_).subspan(offset * keys, length * keys),
        .value = std::span<const float>(conv_out_).subspan(offset * channels + 2 * keys),
        .value_stride = channels,
        .g = std::span<const float>(g_).subspan(offset * shape.v_heads, length * shape.v_heads),
        .beta = std::span<const float>(beta_).subspan(offset * shape.v_heads, length * shape.v_heads),
        .rows = length,
    };
    backend::cpu::gated_delta_rule(inputs, shape, start, delta_chunk, initial, state,
                                   std::span<float>(core_).subspan(offset * values, length * values));
  }
  const auto eps = static_cast<float>(config_.rms_norm_eps);
  mixed_.gated_rms_norm(core_, z_, weights.norm, eps);
  mixed_.project_accumulate(weights.output, hidden_);
  if (const LayerLora* lora = lora_of(layer)) add_low_rank(lora->mixer_output, mixed_.fp32(), hidden_);
}

}  // namespace

std::unique_ptr<decoder::CausalDecoder> load_qwen3_5(const std::filesystem::path& dir,
                                                     backend::cpu::Precision precision, bool noncausal_full_attention,
                                                     OutputHead head, const decoder::LoraAdapter* lora) {
  // A GGUF file carries its config in its metadata; a directory has config.json.
  const auto weights = std::make_shared<const Checkpoint>(Checkpoint::open(dir));
  const Qwen35Config config = weights->gguf() != nullptr
                                  ? read_qwen3_5_config(checkpoint::gguf_config(*weights->gguf()))
                                  : read_qwen3_5_config(dir / "config.json");
  return std::make_unique<Qwen35Decoder>(config, weights, precision, noncausal_full_attention, head, lora);
}

}  // namespace s1::qwen3_5
