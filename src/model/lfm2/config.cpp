#include "model/lfm2/config.h"

#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/checkpoint/config_reader.h"
#include "model/decoder/rope_config.h"

namespace s1::lfm2 {
namespace {

using checkpoint::ConfigReader;

// Lfm2MLP's width: with block_auto_adjust_ff_dim, two thirds of the configured width, scaled by
// block_ffn_dim_multiplier and rounded up to block_multiple_of (Python int() truncation throughout).
// Transformers skips the scaling and rounding for a null multiplier; null reads as absent (1.0) here,
// and a width that then differs from the checkpoint's fails the load on the MLP weights' shapes.
int64_t effective_ff_width(ConfigReader& reader, int64_t configured) {
  const bool auto_adjust = reader.optional<bool>("block_auto_adjust_ff_dim", true);
  const double multiplier = reader.optional<double>("block_ffn_dim_multiplier", 1.0);
  const int64_t multiple_of = reader.optional<int64_t>("block_multiple_of", 256);
  reader.require_positive("block_multiple_of", multiple_of);
  if (!auto_adjust) return configured;
  auto width = static_cast<int64_t>(2.0 * static_cast<double>(configured) / 3.0);
  width = static_cast<int64_t>(multiplier * static_cast<double>(width));
  return multiple_of * ((width + multiple_of - 1) / multiple_of);
}

// Per layer: full attention or conv, from layer_types, else full_attn_idxs (both must agree when
// both are given); neither means every layer is attention (Transformers' default).
std::vector<bool> read_layer_pattern(ConfigReader& reader, int64_t layers) {
  const auto count = static_cast<std::size_t>(layers);
  std::optional<std::vector<bool>> from_types;
  if (auto types = reader.optional<std::vector<std::string>>("layer_types")) {
    if (types->size() != count) reader.reject("layer_types", "must list num_hidden_layers entries");
    from_types.emplace();
    for (const std::string& type : *types) {
      if (type != "conv" && type != "full_attention") {
        reader.reject("layer_types", "'" + type + "' is not a layer type of LFM2 (conv, full_attention)");
      }
      from_types->push_back(type == "full_attention");
    }
  }
  std::optional<std::vector<bool>> from_indices;
  if (auto indices = reader.optional<std::vector<int64_t>>("full_attn_idxs")) {
    from_indices.emplace(count, false);
    for (const int64_t index : *indices) {
      if (index < 0 || index >= layers) reader.reject("full_attn_idxs", "names a layer outside num_hidden_layers");
      (*from_indices)[static_cast<std::size_t>(index)] = true;
    }
  }
  if (from_types && from_indices && *from_types != *from_indices) {
    reader.reject("full_attn_idxs", "disagrees with layer_types");
  }
  if (from_types) return *from_types;
  if (from_indices) return *from_indices;
  return std::vector<bool>(count, true);
}

// Settings of the original LFM2 configs that Transformers ignores; they are accepted only when they
// say what the rest of the config says.
void check_redundant_settings(ConfigReader& reader, const Lfm2Config& config) {
  for (const std::string_view key : {"block_dim", "conv_dim", "conv_dim_out"}) {
    if (auto width = reader.optional<int64_t>(key); width && *width != config.hidden_size) {
      reader.reject(key, "differs from hidden_size");
    }
  }
  if (auto heads = reader.optional<int64_t>("num_heads"); heads && *heads != config.num_attention_heads) {
    reader.reject("num_heads", "differs from num_attention_heads");
  }
  if (auto eps = reader.optional<double>("block_norm_eps"); eps && *eps != config.norm_eps) {
    reader.reject("block_norm_eps", "differs from norm_eps");
  }
  if (!reader.optional<bool>("block_use_swiglu", true)) reader.reject("block_use_swiglu", "false is not supported");
  if (!reader.optional<bool>("use_pos_enc", true)) reader.reject("use_pos_enc", "false is not supported");
}

}  // namespace

Lfm2Config read_lfm2_config(const std::filesystem::path& config_file) {
  return read_lfm2_config(ConfigReader::from_file(config_file));
}

Lfm2Config read_lfm2_config(ConfigReader reader) {
  Lfm2Config config;
  if (const auto model_type = reader.required<std::string>("model_type"); model_type != "lfm2") {
    reader.reject("model_type", "is '" + model_type + "'; this family loads 'lfm2' checkpoints");
  }
  config.vocab_size = reader.required<int64_t>("vocab_size");
  config.hidden_size = reader.required<int64_t>("hidden_size");
  config.num_hidden_layers = reader.required<int64_t>("num_hidden_layers");
  config.num_attention_heads = reader.required<int64_t>("num_attention_heads");
  config.num_key_value_heads = reader.required<int64_t>("num_key_value_heads");
  config.max_position_embeddings = reader.required<int64_t>("max_position_embeddings");
  config.norm_eps = reader.required<double>("norm_eps");
  config.conv_kernel = reader.required<int64_t>("conv_L_cache");
  config.conv_bias = reader.optional<bool>("conv_bias", false);
  // Transformers takes block_ff_dim and tie_embedding (the original spellings) over the newer keys.
  std::optional<int64_t> ff = reader.optional<int64_t>("intermediate_size");
  if (auto block_ff = reader.optional<int64_t>("block_ff_dim")) ff = block_ff;
  if (!ff) reader.reject("intermediate_size", "is missing (and there is no block_ff_dim)");
  config.tie_word_embeddings = reader.optional<bool>("tie_word_embeddings", true);
  if (auto tie = reader.optional<bool>("tie_embedding")) config.tie_word_embeddings = *tie;
  reader.require_positive("vocab_size", config.vocab_size);
  reader.require_positive("hidden_size", config.hidden_size);
  reader.require_positive("num_hidden_layers", config.num_hidden_layers);
  reader.require_positive("num_attention_heads", config.num_attention_heads);
  reader.require_positive("num_key_value_heads", config.num_key_value_heads);
  reader.require_positive("max_position_embeddings", config.max_position_embeddings);
  reader.require_positive("conv_L_cache", config.conv_kernel);
  reader.require_positive("intermediate_size", *ff);
  config.intermediate_size = effective_ff_width(reader, *ff);
  reader.require_positive("intermediate_size", config.intermediate_size);
  if (config.num_attention_heads % config.num_key_value_heads != 0) {
    reader.reject("num_key_value_heads",
                  "must divide num_attention_heads (" + std::to_string(config.num_attention_heads) + ")");
  }
  config.head_dim = reader.optional<int64_t>("head_dim", config.hidden_size / config.num_attention_heads);
  reader.require_positive("head_dim", config.head_dim);
  if (config.head_dim % 2 != 0) reader.reject("head_dim", "must be even (RoPE rotates pairs)");
  if (config.vocab_size > INT32_MAX) reader.reject("vocab_size", "must fit 32-bit token ids");
  if (!(config.norm_eps > 0.0)) reader.reject("norm_eps", "must be positive");
  config.full_attention = read_layer_pattern(reader, config.num_hidden_layers);
  config.rope_theta = decoder::read_default_rope_theta(reader, 1000000.0);
  check_redundant_settings(reader, config);
  // Initialisation, dropout, cache and token-id settings do not touch an inference forward pass.
  reader.ignore({"architectures", "_name_or_path", "transformers_version", "torch_dtype", "dtype",
                 "initializer_range", "use_cache", "pad_token_id", "bos_token_id", "eos_token_id",
                 "attention_dropout", "block_mlp_init_scale", "block_out_init_scale", "block_use_xavier_init",
                 "conv_use_xavier_init"});
  reader.finish();
  return config;
}

}  // namespace s1::lfm2
