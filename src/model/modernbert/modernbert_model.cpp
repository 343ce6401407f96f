#include "model/modernbert/modernbert_model.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "backend/cpu/attention.h"
#include "backend/cpu/convert.h"
#include "backend/cpu/gelu.h"
#include "backend/cpu/layer_norm.h"
#include "backend/cpu/rope.h"
#include "backend/cpu/team.h"
#include "model/checkpoint/load_error.h"

namespace s1::modernbert {
namespace {

using checkpoint::Checkpoint;
using checkpoint::LoadError;

class WeightNames {
 public:
  WeightNames(const Checkpoint& weights, std::string prefix) : weights_(weights), prefix_(std::move(prefix)) {}

  std::vector<float> get(const std::string& name, std::initializer_list<int64_t> shape) const {
    return checkpoint::to_float(weights_.get(prefix_ + name, shape));
  }

  // A bias the config declares must be there; one it does not declare must not be (loading it would
  // mean the config and the weights describe different models).
  std::vector<float> bias(const std::string& name, int64_t width, bool declared, std::string_view setting) const {
    if (declared) return get(name, {width});
    if (weights_.find(prefix_ + name) != nullptr) {
      throw LoadError(weights_.source().string() + ": tensor '" + prefix_ + name + "' is present but config.json's " +
                      std::string(setting) + " is false");
    }
    return {};
  }

 private:
  const Checkpoint& weights_;
  std::string prefix_;
};

}  // namespace

ModernBertEncoder::ModernBertEncoder(const ModernBertConfig& config, const Checkpoint& weights,
                                     backend::cpu::Precision precision, const std::string& prefix)
    : config_(config),
      info_{"modernbert", static_cast<std::size_t>(config.hidden_size), static_cast<std::size_t>(config.vocab_size),
            static_cast<std::size_t>(config.max_position_embeddings)},
      precision_(precision) {
  if (!backend::cpu::linear_supported(precision)) {
    throw LoadError(weights.source().string() + ": bf16 needs a CPU with AVX-512 (AMX preferred); use fp32");
  }
  const WeightNames names(weights, prefix);
  const int64_t hidden = config.hidden_size;
  const int64_t inner = config.intermediate_size;
  const auto h = static_cast<std::size_t>(hidden);
  const auto i = static_cast<std::size_t>(inner);
  const auto norm = [&](const std::string& name, std::vector<float>& weight, std::vector<float>& bias) {
    weight = names.get(name + ".weight", {hidden});
    bias = names.bias(name + ".bias", hidden, config.norm_bias, "norm_bias");
    if (bias.empty()) bias.assign(h, 0.0F);  // LayerNorm without bias adds zero
  };
  token_embeddings_ = names.get("embeddings.tok_embeddings.weight", {config.vocab_size, hidden});
  norm("embeddings.norm", embedding_norm_weight_, embedding_norm_bias_);
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
    const std::string layer = "layers." + std::to_string(l) + ".";
    const auto qkv_w = names.get(layer + "attn.Wqkv.weight", {3 * hidden, hidden});
    const auto qkv_b = names.bias(layer + "attn.Wqkv.bias", 3 * hidden, config.attention_bias, "attention_bias");
    const auto out_w = names.get(layer + "attn.Wo.weight", {hidden, hidden});
    const auto out_b = names.bias(layer + "attn.Wo.bias", hidden, config.attention_bias, "attention_bias");
    // Wi stacks [input | gate] (GeGLU is GELU(input) ⊙ gate): one matmul of 2·inner outputs reads
    // the normalised rows once and streams both halves' weights in one pass.
    const auto wi_w = names.get(layer + "mlp.Wi.weight", {2 * inner, hidden});
    const auto wi_b = names.bias(layer + "mlp.Wi.bias", 2 * inner, config.mlp_bias, "mlp_bias");
    const auto wo_w = names.get(layer + "mlp.Wo.weight", {hidden, inner});
    const auto wo_b = names.bias(layer + "mlp.Wo.bias", hidden, config.mlp_bias, "mlp_bias");
    Layer built{
        .type = config.layer_types[static_cast<std::size_t>(l)],
        .attention_norm_weight = {},
        .attention_norm_bias = {},
        .qkv = backend::cpu::PackedLinear(qkv_w, qkv_b, h, 3 * h, precision),
        .attention_output = backend::cpu::PackedLinear(out_w, out_b, h, h, precision),
        .mlp_norm_weight = {},
        .mlp_norm_bias = {},
        .mlp_input = backend::cpu::PackedLinear(wi_w, wi_b, h, 2 * i, precision),
        .mlp_output = backend::cpu::PackedLinear(wo_w, wo_b, i, h, precision),
    };
    // Layer 0 attends to the normalised embeddings directly (Transformers: nn.Identity).
    if (l == 0) {
      if (weights.find(prefix + layer + "attn_norm.weight") != nullptr) {
        throw LoadError(weights.source().string() + ": tensor '" + prefix + layer +
                        "attn_norm.weight' is present, but ModernBERT's layer 0 has no attention norm");
      }
    } else {
      norm(layer + "attn_norm", built.attention_norm_weight, built.attention_norm_bias);
    }
    norm(layer + "mlp_norm", built.mlp_norm_weight, built.mlp_norm_bias);
    layers_.push_back(std::move(built));
  }
  norm("final_norm", final_norm_weight_, final_norm_bias_);
}

ModernBertEncoder::~ModernBertEncoder() = default;
ModernBertEncoder::ModernBertEncoder(ModernBertEncoder&&) noexcept = default;
ModernBertEncoder& ModernBertEncoder::operator=(ModernBertEncoder&&) noexcept = default;

std::span<const float> ModernBertEncoder::forward(std::span<const std::span<const int32_t>> sequences) {
  const auto width = static_cast<std::size_t>(config_.hidden_size);
  const auto inner = static_cast<std::size_t>(config_.intermediate_size);
  const auto heads = static_cast<std::size_t>(config_.num_attention_heads);
  const auto head_dim = static_cast<std::size_t>(config_.head_dim());
  layout_.clear();
  std::size_t used = 0;
  std::size_t longest = 0;
  for (const std::span<const int32_t> ids : sequences) {
    if (ids.empty()) throw std::invalid_argument("ModernBertEncoder::forward: empty sequence");
    if (ids.size() > static_cast<std::size_t>(config_.max_position_embeddings)) {
      throw std::invalid_argument("ModernBertEncoder::forward: sequence of " + std::to_string(ids.size()) +
                                  " tokens exceeds max_position_embeddings");
    }
    for (const int32_t id : ids) {
      if (id < 0 || id >= config_.vocab_size) {
        throw std::invalid_argument("ModernBertEncoder::forward: token id " + std::to_string(id) + " out of range");
      }
    }
    layout_.push_back(backend::cpu::PackedSequence{used, ids.size()});
    used += ids.size();
    longest = std::max(longest, ids.size());
  }
  if (used == 0) return {};
  const std::size_t rows = backend::cpu::padded_row_count(used);
  if (global_rope_.positions < longest) {
    global_rope_ = backend::cpu::rope_table(head_dim, static_cast<float>(config_.global_rope_theta), longest);
    local_rope_ = backend::cpu::rope_table(head_dim, static_cast<float>(config_.local_rope_theta), longest);
  }

  hidden_.assign(rows * width, 0.0F);
  for (std::size_t s = 0; s < layout_.size(); ++s) {
    for (std::size_t t = 0; t < layout_[s].length; ++t) {
      const float* embedding = token_embeddings_.data() + static_cast<std::size_t>(sequences[s][t]) * width;
      std::copy_n(embedding, width, hidden_.data() + (layout_[s].offset + t) * width);
    }
  }
  const auto eps = static_cast<float>(config_.norm_eps);
  const std::span<float> live(hidden_.data(), used * width);
  backend::cpu::layer_norm(live, embedding_norm_weight_, embedding_norm_bias_, eps, live);

  const bool bf16 = precision_ == backend::cpu::Precision::bf16;
  // In bf16 every activation between two ops is bf16; only the residual stream (hidden_) stays fp32.
  // Rows no sequence owns stay zero in the buffers a matmul reads (0x0000 is +0.0).
  if (bf16) {
    normed_bf16_.assign(rows * width, 0);
    qkv_bf16_.resize(rows * 3 * width);
    context_bf16_.assign(rows * width, 0);
    projected_bf16_.resize(rows * 2 * inner);
    activated_bf16_.assign(rows * inner, 0);
  } else {
    normed_.assign(rows * width, 0.0F);
    qkv_.resize(rows * 3 * width);
    context_.assign(rows * width, 0.0F);
    projected_.resize(rows * 2 * inner);
    activated_.resize(rows * inner);
  }
  const std::span<float> live_normed(normed_.data(), bf16 ? 0 : used * width);
  const std::span<backend::cpu::Bf16Bits> live_normed_bf16(normed_bf16_.data(), bf16 ? used * width : 0);
  // The pre-norm feeding a matmul: written as bf16 for a bf16 matmul, which then skips its own
  // conversion pass.
  const auto normalise = [&](std::span<const float> gamma, std::span<const float> beta) {
    if (bf16) {
      backend::cpu::layer_norm_to_bf16(live, gamma, beta, eps, live_normed_bf16);
    } else {
      backend::cpu::layer_norm(live, gamma, beta, eps, live_normed);
    }
  };
  for (const Layer& layer : layers_) {
    if (!layer.attention_norm_weight.empty()) {
      normalise(layer.attention_norm_weight, layer.attention_norm_bias);
    } else if (bf16) {
      backend::cpu::convert_fp32_to_bf16(live, live_normed_bf16);
    } else {
      std::copy_n(hidden_.data(), used * width, normed_.data());
    }
    if (bf16) {
      // Q/K/V in bf16, as attention's AMX products read them: half the bytes stored and read.
      layer.qkv.forward(std::span<const backend::cpu::Bf16Bits>(normed_bf16_), qkv_bf16_);
    } else {
      layer.qkv.forward(normed_, qkv_);
    }
    // RoPE is applied by attention as it reads each query and key (one pass over QKV fewer).
    const std::size_t half_window =
        layer.type == LayerType::local ? static_cast<std::size_t>(config_.local_half_window()) : 0;
    const backend::cpu::RopeTable* rope = layer.type == LayerType::global ? &global_rope_ : &local_rope_;
    if (bf16) {
      // Attention writes the bf16 rows the output projection reads (no conversion pass), each
      // thread its share of the query rows.
      backend::cpu::run_team([&](backend::cpu::Team& team) {
        const backend::cpu::Team::Range share = team.share(used);
        backend::cpu::packed_attention_rows(layout_, std::span<const backend::cpu::Bf16Bits>(qkv_bf16_), heads,
                                            head_dim, half_window, share.begin, share.end,
                                            std::span<backend::cpu::Bf16Bits>(context_bf16_), precision_, rope);
      });
      layer.attention_output.forward_accumulate(std::span<const backend::cpu::Bf16Bits>(context_bf16_), hidden_);
    } else {
      backend::cpu::packed_attention(layout_, qkv_, heads, head_dim, half_window, context_, precision_, rope);
      layer.attention_output.forward_accumulate(context_, hidden_);
    }

    normalise(layer.mlp_norm_weight, layer.mlp_norm_bias);
    if (bf16) {
      // Wi writes bf16, as Transformers' bf16 forward does: the matmul stores half the bytes and
      // GeGLU reads half.
      layer.mlp_input.forward(std::span<const backend::cpu::Bf16Bits>(normed_bf16_), projected_bf16_);
      backend::cpu::geglu_to_bf16(projected_bf16_, inner, activated_bf16_);
      layer.mlp_output.forward_accumulate(std::span<const backend::cpu::Bf16Bits>(activated_bf16_), hidden_);
    } else {
      layer.mlp_input.forward(normed_, projected_);
      backend::cpu::geglu(projected_, inner, activated_);
      layer.mlp_output.forward_accumulate(activated_, hidden_);
    }
  }
  backend::cpu::layer_norm(live, final_norm_weight_, final_norm_bias_, eps, live);
  return std::span<const float>(hidden_).first(used * width);
}

}  // namespace s1::modernbert
