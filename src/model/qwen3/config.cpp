#include "model/qwen3/config.h"

#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/checkpoint/config_reader.h"
#include "model/decoder/rope_config.h"

namespace s1::qwen3 {
namespace {

using checkpoint::ConfigReader;

}  // namespace

Qwen3Config read_qwen3_config(const std::filesystem::path& config_file) {
  return read_qwen3_config(ConfigReader::from_file(config_file));
}

Qwen3Config read_qwen3_config(ConfigReader reader) {
  Qwen3Config config;
  if (const auto model_type = reader.required<std::string>("model_type"); model_type != "qwen3") {
    reader.reject("model_type", "is '" + model_type + "'; this family loads 'qwen3' checkpoints");
  }
  config.vocab_size = reader.required<int64_t>("vocab_size");
  config.hidden_size = reader.required<int64_t>("hidden_size");
  config.intermediate_size = reader.required<int64_t>("intermediate_size");
  config.num_hidden_layers = reader.required<int64_t>("num_hidden_layers");
  config.num_attention_heads = reader.required<int64_t>("num_attention_heads");
  config.num_key_value_heads = reader.optional<int64_t>("num_key_value_heads", config.num_attention_heads);
  config.head_dim = reader.required<int64_t>("head_dim");
  config.max_position_embeddings = reader.required<int64_t>("max_position_embeddings");
  config.rms_norm_eps = reader.required<double>("rms_norm_eps");
  config.tie_word_embeddings = reader.optional<bool>("tie_word_embeddings", false);
  reader.require_positive("vocab_size", config.vocab_size);
  reader.require_positive("hidden_size", config.hidden_size);
  reader.require_positive("intermediate_size", config.intermediate_size);
  reader.require_positive("num_hidden_layers", config.num_hidden_layers);
  reader.require_positive("num_attention_heads", config.num_attention_heads);
  reader.require_positive("num_key_value_heads", config.num_key_value_heads);
  reader.require_positive("head_dim", config.head_dim);
  reader.require_positive("max_position_embeddings", config.max_position_embeddings);
  if (config.num_attention_heads % config.num_key_value_heads != 0) {
    reader.reject("num_key_value_heads",
                  "must divide num_attention_heads (" + std::to_string(config.num_attention_heads) + ")");
  }
  if (config.head_dim % 2 != 0) reader.reject("head_dim", "must be even (RoPE rotates pairs)");
  if (config.vocab_size > INT32_MAX) reader.reject("vocab_size", "must fit 32-bit token ids");
  if (!(config.rms_norm_eps > 0.0)) reader.reject("rms_norm_eps", "must be positive");
  config.rope_theta = decoder::read_default_rope_theta(reader);

  // Settings that change the maths: only the values this family implements are accepted.
  if (auto act = reader.optional<std::string>("hidden_act"); act && *act != "silu") {
    reader.reject("hidden_act", "is '" + *act + "'; only 'silu' is supported");
  }
  if (reader.optional<bool>("attention_bias", false)) {
    reader.reject("attention_bias", "true is not supported (Qwen3 projections have no bias)");
  }
  const bool sliding = reader.optional<bool>("use_sliding_window", false);
  if (sliding) reader.reject("use_sliding_window", "sliding-window attention is not supported");
  if (auto types = reader.optional<std::vector<std::string>>("layer_types")) {
    if (types->size() != static_cast<std::size_t>(config.num_hidden_layers)) {
      reader.reject("layer_types", "must list num_hidden_layers entries");
    }
    for (const std::string& type : *types) {
      if (type != "full_attention")
        reader.reject("layer_types", "'" + type + "' is not supported (full_attention only)");
    }
  }
  // sliding_window and max_window_layers only matter with use_sliding_window (rejected above);
  // dropout, initialisation, cache and token-id settings do not touch an inference forward pass.
  reader.ignore({"architectures", "_name_or_path", "transformers_version", "torch_dtype", "dtype", "sliding_window",
                 "max_window_layers", "attention_dropout", "initializer_range", "use_cache", "pad_token_id",
                 "bos_token_id", "eos_token_id"});
  reader.finish();
  return config;
}

}  // namespace s1::qwen3
