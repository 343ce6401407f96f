#include "model/checkpoint/gguf_names.h"

#include <array>

namespace s1::checkpoint {
namespace {

// "{}" stands for the layer index. A stem without a ".weight"/".bias" suffix matches both
// suffixes (carried over to our name); a full name (ssm_a, ssm_dt.bias) matches only itself.
struct Entry {
  std::string_view gguf;
  std::string_view ours;
  uint32_t transforms = kGgufAsIs;
  bool per_head = false;
};

struct Architecture {
  std::string_view name;
  std::span<const Entry> entries;
};

// The names TensorNameMap (gguf-py/gguf/tensor_mapping.py) gives the tensors of
// Qwen3ForCausalLM; tests/fixtures/gguf/name_map.json holds them for our tiny fixture.
constexpr std::array kQwen3{
    Entry{"token_embd", "model.embed_tokens"},
    Entry{"output_norm", "model.norm"},
    Entry{"output", "lm_head"},
    Entry{"blk.{}.attn_norm", "model.layers.{}.input_layernorm"},
    Entry{"blk.{}.attn_q", "model.layers.{}.self_attn.q_proj"},
    Entry{"blk.{}.attn_k", "model.layers.{}.self_attn.k_proj"},
    Entry{"blk.{}.attn_v", "model.layers.{}.self_attn.v_proj"},
    Entry{"blk.{}.attn_output", "model.layers.{}.self_attn.o_proj"},
    Entry{"blk.{}.attn_q_norm", "model.layers.{}.self_attn.q_norm"},
    Entry{"blk.{}.attn_k_norm", "model.layers.{}.self_attn.k_norm"},
    Entry{"blk.{}.ffn_norm", "model.layers.{}.post_attention_layernorm"},
    Entry{"blk.{}.ffn_gate", "model.layers.{}.mlp.gate_proj"},
    Entry{"blk.{}.ffn_up", "model.layers.{}.mlp.up_proj"},
    Entry{"blk.{}.ffn_down", "model.layers.{}.mlp.down_proj"},
};

// Qwen3.5 (convert_hf_to_gguf.py's Qwen3_5TextModel over Qwen3NextModel and
// _LinearAttentionVReorderBase): every "*norm.weight" but the gated linear-attention norm is
// stored plus one, A_log as -exp(A_log), dt_bias renamed to dt_proj.bias, conv1d squeezed, and
// value heads tiled when there are fewer key heads.
constexpr uint32_t kTiledRows = kGgufTiledValueRows;
constexpr std::array kQwen35{
    Entry{"token_embd", "model.embed_tokens"},
    Entry{"output_norm", "model.norm", kGgufMinusOne},
    Entry{"output", "lm_head"},
    Entry{"blk.{}.attn_norm", "model.layers.{}.input_layernorm", kGgufMinusOne},
    Entry{"blk.{}.post_attention_norm", "model.layers.{}.post_attention_layernorm", kGgufMinusOne},
    Entry{"blk.{}.attn_q", "model.layers.{}.self_attn.q_proj"},
    Entry{"blk.{}.attn_k", "model.layers.{}.self_attn.k_proj"},
    Entry{"blk.{}.attn_v", "model.layers.{}.self_attn.v_proj"},
    Entry{"blk.{}.attn_output", "model.layers.{}.self_attn.o_proj"},
    Entry{"blk.{}.attn_q_norm", "model.layers.{}.self_attn.q_norm", kGgufMinusOne},
    Entry{"blk.{}.attn_k_norm", "model.layers.{}.self_attn.k_norm", kGgufMinusOne},
    Entry{"blk.{}.ffn_gate", "model.layers.{}.mlp.gate_proj"},
    Entry{"blk.{}.ffn_up", "model.layers.{}.mlp.up_proj"},
    Entry{"blk.{}.ffn_down", "model.layers.{}.mlp.down_proj"},
    Entry{"blk.{}.attn_qkv", "model.layers.{}.linear_attn.in_proj_qkv", kGgufTiledValueTail},
    Entry{"blk.{}.attn_gate", "model.layers.{}.linear_attn.in_proj_z", kTiledRows},
    Entry{"blk.{}.ssm_alpha", "model.layers.{}.linear_attn.in_proj_a", kTiledRows, true},
    Entry{"blk.{}.ssm_beta", "model.layers.{}.linear_attn.in_proj_b", kTiledRows, true},
    Entry{"blk.{}.ssm_a", "model.layers.{}.linear_attn.A_log", kGgufLogOfNegated | kTiledRows, true},
    Entry{"blk.{}.ssm_dt.bias", "model.layers.{}.linear_attn.dt_bias", kTiledRows, true},
    Entry{"blk.{}.ssm_conv1d", "model.layers.{}.linear_attn.conv1d", kGgufUnsqueezeConv | kGgufTiledValueTail},
    Entry{"blk.{}.ssm_norm", "model.layers.{}.linear_attn.norm"},
    Entry{"blk.{}.ssm_out", "model.layers.{}.linear_attn.out_proj", kGgufTiledValueColumns},
};

// LFM2 (LFM2Model): the short-conv kernels are squeezed to 2-D.
constexpr std::array kLfm2{
    Entry{"token_embd", "model.embed_tokens"},
    Entry{"token_embd_norm", "model.embedding_norm"},
    Entry{"output", "lm_head"},
    Entry{"blk.{}.attn_norm", "model.layers.{}.operator_norm"},
    Entry{"blk.{}.ffn_norm", "model.layers.{}.ffn_norm"},
    Entry{"blk.{}.shortconv.conv", "model.layers.{}.conv.conv", kGgufUnsqueezeConv},
    Entry{"blk.{}.shortconv.in_proj", "model.layers.{}.conv.in_proj"},
    Entry{"blk.{}.shortconv.out_proj", "model.layers.{}.conv.out_proj"},
    Entry{"blk.{}.attn_q", "model.layers.{}.self_attn.q_proj"},
    Entry{"blk.{}.attn_k", "model.layers.{}.self_attn.k_proj"},
    Entry{"blk.{}.attn_v", "model.layers.{}.self_attn.v_proj"},
    Entry{"blk.{}.attn_output", "model.layers.{}.self_attn.out_proj"},
    Entry{"blk.{}.attn_q_norm", "model.layers.{}.self_attn.q_layernorm"},
    Entry{"blk.{}.attn_k_norm", "model.layers.{}.self_attn.k_layernorm"},
    Entry{"blk.{}.ffn_gate", "model.layers.{}.feed_forward.w1"},
    Entry{"blk.{}.ffn_down", "model.layers.{}.feed_forward.w2"},
    Entry{"blk.{}.ffn_up", "model.layers.{}.feed_forward.w3"},
};

// BERT (BertModel; sentence-transformers' MiniLM layout, without the "bert." prefix the
// converter strips).
constexpr std::array kBert{
    Entry{"token_embd", "embeddings.word_embeddings"},
    Entry{"position_embd", "embeddings.position_embeddings"},
    Entry{"token_types", "embeddings.token_type_embeddings"},
    Entry{"token_embd_norm", "embeddings.LayerNorm"},
    Entry{"blk.{}.attn_q", "encoder.layer.{}.attention.self.query"},
    Entry{"blk.{}.attn_k", "encoder.layer.{}.attention.self.key"},
    Entry{"blk.{}.attn_v", "encoder.layer.{}.attention.self.value"},
    Entry{"blk.{}.attn_output", "encoder.layer.{}.attention.output.dense"},
    Entry{"blk.{}.attn_output_norm", "encoder.layer.{}.attention.output.LayerNorm"},
    Entry{"blk.{}.ffn_up", "encoder.layer.{}.intermediate.dense"},
    Entry{"blk.{}.ffn_down", "encoder.layer.{}.output.dense"},
    Entry{"blk.{}.layer_output_norm", "encoder.layer.{}.output.LayerNorm"},
};

// ModernBERT (ModernBertModel, "model." prefix stripped).
constexpr std::array kModernBert{
    Entry{"token_embd", "embeddings.tok_embeddings"},
    Entry{"token_embd_norm", "embeddings.norm"},
    Entry{"output_norm", "final_norm"},
    Entry{"cls", "head.dense"},
    Entry{"cls.norm", "head.norm"},
    Entry{"blk.{}.attn_norm", "layers.{}.attn_norm"},
    Entry{"blk.{}.attn_qkv", "layers.{}.attn.Wqkv"},
    Entry{"blk.{}.attn_output", "layers.{}.attn.Wo"},
    Entry{"blk.{}.ffn_norm", "layers.{}.mlp_norm"},
    Entry{"blk.{}.ffn_up", "layers.{}.mlp.Wi"},
    Entry{"blk.{}.ffn_down", "layers.{}.mlp.Wo"},
};

constexpr std::array kArchitectures{
    Architecture{"qwen3", kQwen3}, Architecture{"qwen35", kQwen35},          Architecture{"lfm2", kLfm2},
    Architecture{"bert", kBert},   Architecture{"modern-bert", kModernBert},
};

// The names alone, for callers listing what s1serve maps.
constexpr auto kNames = [] {
  std::array<std::string_view, kArchitectures.size()> names{};
  for (std::size_t i = 0; i < names.size(); ++i) names[i] = kArchitectures[i].name;
  return names;
}();

const Architecture* find_architecture(std::string_view name) {
  for (const auto& architecture : kArchitectures) {
    if (architecture.name == name) return &architecture;
  }
  return nullptr;
}

// "blk.12.attn_q.weight" → layer "12" and pattern "blk.{}.attn_q.weight".
struct Split {
  std::string pattern;
  std::string layer;
};

Split split_layer(std::string_view name) {
  constexpr std::string_view kBlock = "blk.";
  if (!name.starts_with(kBlock)) return {std::string(name), ""};
  std::size_t end = kBlock.size();
  while (end < name.size() && name[end] >= '0' && name[end] <= '9') ++end;
  if (end == kBlock.size() || end == name.size() || name[end] != '.') return {std::string(name), ""};
  // "blk.007" is not a name a writer produces; requiring the canonical form keeps the mapping
  // one-to-one.
  const std::string_view digits = name.substr(kBlock.size(), end - kBlock.size());
  if (digits.size() > 1 && digits.front() == '0') return {std::string(name), ""};
  return {std::string(kBlock) + "{}" + std::string(name.substr(end)), std::string(digits)};
}

std::string fill_layer(std::string_view pattern, const std::string& layer) {
  const auto at = pattern.find("{}");
  if (at == std::string_view::npos) return std::string(pattern);
  return std::string(pattern.substr(0, at)) + layer + std::string(pattern.substr(at + 2));
}

}  // namespace

std::span<const std::string_view> gguf_architectures() { return kNames; }

bool is_mapped_gguf_architecture(std::string_view architecture) { return find_architecture(architecture) != nullptr; }

std::optional<GgufTensorMapping> map_gguf_tensor(std::string_view architecture, std::string_view gguf_name) {
  const Architecture* table = find_architecture(architecture);
  if (table == nullptr) return std::nullopt;
  const Split split = split_layer(gguf_name);
  const bool layered = !split.layer.empty();
  const auto make = [&](const Entry& entry, std::string_view suffix) {
    return GgufTensorMapping{.name = fill_layer(entry.ours, split.layer) + std::string(suffix),
                             .transforms = entry.transforms,
                             .per_head = entry.per_head};
  };
  for (const auto& entry : table->entries) {
    if ((entry.gguf.find("{}") != std::string_view::npos) != layered) continue;
    if (entry.gguf == split.pattern) return make(entry, "");
    for (std::string_view suffix : {std::string_view(".weight"), std::string_view(".bias")}) {
      if (split.pattern.size() == entry.gguf.size() + suffix.size() &&
          std::string_view(split.pattern).starts_with(entry.gguf) &&
          std::string_view(split.pattern).ends_with(suffix)) {
        return make(entry, suffix);
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> gguf_tensor_name(std::string_view architecture, std::string_view name) {
  const Architecture* table = find_architecture(architecture);
  if (table == nullptr) return std::nullopt;
  for (const auto& entry : table->entries) {
    // A squeezed conv kernel keeps its values: the writer drops the middle 1 of its shape.
    if ((entry.transforms & ~uint32_t{kGgufUnsqueezeConv}) != kGgufAsIs) continue;
    // Our pattern's text before and after "{}", and the layer digits between them.
    const auto at = entry.ours.find("{}");
    const std::string_view before = entry.ours.substr(0, at);
    const std::string_view after = at == std::string_view::npos ? "" : entry.ours.substr(at + 2);
    if (!name.starts_with(before)) continue;
    std::string_view rest = name.substr(before.size());
    std::string layer;
    if (at != std::string_view::npos) {
      std::size_t digits = 0;
      while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
      if (digits == 0) continue;
      layer = std::string(rest.substr(0, digits));
      rest = rest.substr(digits);
    }
    if (!rest.starts_with(after)) continue;
    const std::string_view suffix = rest.substr(after.size());
    if (suffix != ".weight" && suffix != ".bias") continue;
    std::string gguf = fill_layer(entry.gguf, layer) + std::string(suffix);
    // The one-to-one check: the name maps back onto ours.
    if (const auto back = map_gguf_tensor(architecture, gguf); back && back->name == name) return gguf;
  }
  return std::nullopt;
}

}  // namespace s1::checkpoint
