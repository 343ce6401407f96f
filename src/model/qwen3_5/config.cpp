#include "model/qwen3_5/config.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <string>
#include <utility>

#include "model/checkpoint/config_reader.h"
#include "model/checkpoint/load_error.h"

namespace s1::qwen3_5 {
namespace {

using checkpoint::ConfigReader;

// RoPE settings, either Transformers 5's rope_parameters object or the older top-level rope_theta
// plus rope_scaling. Qwen3.5's rotary embedding always interleaves the M-RoPE sections
// (recomposition_frequencies ignores mrope_interleaved), so that key is accepted and not read.
void read_rope(ConfigReader& text, Qwen35Config& config) {
  std::optional<double> factor = text.optional<double>("partial_rotary_factor");
  std::optional<double> theta = text.optional<double>("rope_theta");
  // Both keys are read so that the other one may be present as null (Transformers writes unset
  // settings that way); two non-null objects would be two sources of truth.
  std::optional<ConfigReader> rope = text.optional_object("rope_parameters");
  std::optional<ConfigReader> scaling = text.optional_object("rope_scaling");
  const char* rope_key = "rope_parameters";
  if (rope && scaling) text.reject("rope_scaling", "given together with rope_parameters");
  if (!rope) {
    rope = std::move(scaling);
    rope_key = "rope_scaling";
  }
  std::optional<std::vector<int64_t>> mrope_section;
  if (rope) {
    std::optional<std::string> type = rope->optional<std::string>("rope_type");
    if (!type) type = rope->optional<std::string>("type");
    if (type && *type != "default") rope->reject("rope_type", "is '" + *type + "'; only 'default' is supported");
    if (auto nested = rope->optional<double>("rope_theta")) {
      if (theta && *theta != *nested) rope->reject("rope_theta", "disagrees with the top-level rope_theta");
      theta = nested;
    }
    if (auto nested = rope->optional<double>("partial_rotary_factor")) {
      if (factor && *factor != *nested) {
        rope->reject("partial_rotary_factor", "disagrees with the top-level partial_rotary_factor");
      }
      factor = nested;
    }
    mrope_section = rope->optional<std::vector<int64_t>>("mrope_section");
    rope->optional<bool>("mrope_interleaved");
    rope->finish();
  }
  if (!theta) throw checkpoint::LoadError(text.source() + ": rope_theta is missing (in " + rope_key + ")");
  if (!(*theta > 0.0)) text.reject("rope_theta", "must be positive");
  config.rope_theta = *theta;
  // Transformers' Qwen3.5 text config defaults the factor to 0.25 (64 of 256 dims).
  const double rotary_factor = factor.value_or(0.25);
  const double rotary = static_cast<double>(config.head_dim) * rotary_factor;
  config.rotary_dim = static_cast<int64_t>(rotary);
  if (!(rotary_factor > 0.0 && rotary_factor <= 1.0) || config.rotary_dim < 2 || config.rotary_dim % 2 != 0) {
    text.reject("partial_rotary_factor", "must give an even rotary dimension in [2, head_dim] (head_dim " +
                                             std::to_string(config.head_dim) + ")");
  }
  if (mrope_section) {
    const int64_t pairs = std::accumulate(mrope_section->begin(), mrope_section->end(), int64_t{0});
    if (mrope_section->size() != 3 || pairs != config.rotary_dim / 2 ||
        std::ranges::any_of(*mrope_section, [](int64_t n) { return n < 0; })) {
      text.reject(rope_key, "mrope_section must have 3 non-negative entries summing to rotary_dim / 2 = " +
                                std::to_string(config.rotary_dim / 2));
    }
    config.mrope_section = std::move(*mrope_section);
  }
}

void read_layer_types(ConfigReader& text, Qwen35Config& config) {
  const auto layers = static_cast<std::size_t>(config.num_hidden_layers);
  const std::optional<int64_t> interval = text.optional<int64_t>("full_attention_interval");
  if (interval && *interval <= 0) text.reject("full_attention_interval", "must be a positive integer");
  if (auto types = text.optional<std::vector<std::string>>("layer_types")) {
    if (types->size() != layers) {
      text.reject("layer_types", "has " + std::to_string(types->size()) + " entries for " + std::to_string(layers) +
                                     " layers");
    }
    for (const std::string& type : *types) {
      if (type != "full_attention" && type != "linear_attention") {
        text.reject("layer_types", "entry '" + type + "' is neither 'full_attention' nor 'linear_attention'");
      }
      config.full_attention.push_back(type == "full_attention");
    }
    // Pruned checkpoints keep the interval key next to an irregular list; the list is what
    // Transformers builds, so the interval is not checked against it.
    return;
  }
  const int64_t every = interval.value_or(4);
  for (std::size_t i = 0; i < layers; ++i) config.full_attention.push_back((i + 1) % static_cast<std::size_t>(every) == 0);
}

Qwen35Config read_text(ConfigReader& text) {
  Qwen35Config config;
  if (auto model_type = text.optional<std::string>("model_type"); model_type && *model_type != "qwen3_5_text") {
    text.reject("model_type", "is '" + *model_type + "'; expected 'qwen3_5_text'");
  }
  config.vocab_size = text.required<int64_t>("vocab_size");
  config.hidden_size = text.required<int64_t>("hidden_size");
  config.intermediate_size = text.required<int64_t>("intermediate_size");
  config.num_hidden_layers = text.required<int64_t>("num_hidden_layers");
  config.num_attention_heads = text.required<int64_t>("num_attention_heads");
  config.num_key_value_heads = text.required<int64_t>("num_key_value_heads");
  // Defaults are Transformers' Qwen3_5TextConfig defaults.
  config.head_dim = text.optional<int64_t>("head_dim", 256);
  config.max_position_embeddings = text.optional<int64_t>("max_position_embeddings", 32768);
  config.rms_norm_eps = text.optional<double>("rms_norm_eps", 1e-6);
  config.linear_conv_kernel_dim = text.optional<int64_t>("linear_conv_kernel_dim", 4);
  config.linear_key_head_dim = text.optional<int64_t>("linear_key_head_dim", 128);
  config.linear_value_head_dim = text.optional<int64_t>("linear_value_head_dim", 128);
  config.linear_num_key_heads = text.optional<int64_t>("linear_num_key_heads", 16);
  config.linear_num_value_heads = text.optional<int64_t>("linear_num_value_heads", 32);
  config.tie_word_embeddings = text.optional<bool>("tie_word_embeddings", false);
  for (const auto& [key, value] :
       {std::pair<std::string_view, int64_t>{"vocab_size", config.vocab_size},
        {"hidden_size", config.hidden_size},
        {"intermediate_size", config.intermediate_size},
        {"num_hidden_layers", config.num_hidden_layers},
        {"num_attention_heads", config.num_attention_heads},
        {"num_key_value_heads", config.num_key_value_heads},
        {"head_dim", config.head_dim},
        {"max_position_embeddings", config.max_position_embeddings},
        {"linear_conv_kernel_dim", config.linear_conv_kernel_dim},
        {"linear_key_head_dim", config.linear_key_head_dim},
        {"linear_value_head_dim", config.linear_value_head_dim},
        {"linear_num_key_heads", config.linear_num_key_heads},
        {"linear_num_value_heads", config.linear_num_value_heads}}) {
    text.require_positive(key, value);
  }
  if (config.num_attention_heads % config.num_key_value_heads != 0) {
    text.reject("num_key_value_heads", "must divide num_attention_heads");
  }
  if (config.linear_num_value_heads % config.linear_num_key_heads != 0) {
    text.reject("linear_num_key_heads", "must divide linear_num_value_heads");
  }
  if (!(config.rms_norm_eps > 0.0)) text.reject("rms_norm_eps", "must be positive");
  read_rope(text, config);
  read_layer_types(text, config);

  if (auto act = text.optional<std::string>("hidden_act"); act && *act != "silu") {
    text.reject("hidden_act", "is '" + *act + "'; only 'silu' is supported");
  }
  if (text.optional<bool>("attention_bias", false)) text.reject("attention_bias", "projection biases are not supported");
  if (!text.optional<bool>("attn_output_gate", true)) {
    text.reject("attn_output_gate", "false is not supported (Qwen3.5 attention is always output-gated)");
  }
  if (auto dtype = text.optional<std::string>("mamba_ssm_dtype"); dtype && *dtype != "float32") {
    text.reject("mamba_ssm_dtype", "is '" + *dtype + "'; the recurrent state is kept in float32 only");
  }
  if (auto moe = text.optional<std::vector<int64_t>>("mlp_only_layers"); moe && !moe->empty()) {
    text.reject("mlp_only_layers", "mixture-of-experts layouts are not supported");
  }
  // mtp_*: the multi-token-prediction head, unused by a forward pass (its weights are skipped too).
  // The rest: token ids, training-only settings and bookkeeping.
  text.ignore({"architectures", "_name_or_path", "transformers_version", "torch_dtype", "dtype", "attention_dropout",
               "initializer_range", "use_cache", "pad_token_id", "bos_token_id", "eos_token_id",
               "mtp_num_hidden_layers", "mtp_use_dedicated_embeddings", "output_attentions",
               "output_hidden_states"});
  text.finish();
  return config;
}

}  // namespace

Qwen35Config read_qwen3_5_config(const std::filesystem::path& config_file) {
  return read_qwen3_5_config(ConfigReader::from_file(config_file));
}

Qwen35Config read_qwen3_5_config(ConfigReader root) {
  const std::optional<std::string> model_type = root.optional<std::string>("model_type");
  if (model_type && *model_type == "qwen3_5") {
    ConfigReader text = root.required_object("text_config");
    Qwen35Config config = read_text(text);
    config.multimodal_wrapper = true;
    // Transformers ties the wrapper's LM head by the wrapper's own flag (default false).
    config.tie_word_embeddings = root.optional<bool>("tie_word_embeddings", false);
    // The vision tower and its other token ids belong to the multimodal front end, not to the decoder;
    // auto_map / custom_pipelines name the remote code a published package bundles (D3's).
    // Transformers' default id; a placeholder outside the vocabulary (a tiny text-only stand-in
    // keeps the default) can never be in a prompt, so such a checkpoint takes no images.
    const int64_t image_token = root.optional<int64_t>("image_token_id", 248056);
    if (image_token >= 0 && image_token < config.vocab_size) config.image_token_id = image_token;
    root.ignore({"vision_config", "video_token_id", "vision_start_token_id", "vision_end_token_id",
                 "architectures", "_name_or_path", "transformers_version", "torch_dtype", "dtype", "pad_token_id",
                 "bos_token_id", "eos_token_id", "use_cache", "auto_map", "custom_pipelines"});
    root.finish();
    return config;
  }
  if (model_type && *model_type != "qwen3_5_text") {
    root.reject("model_type", "is '" + *model_type + "'; this family loads 'qwen3_5_text' or 'qwen3_5'");
  }
  return read_text(root);
}

}  // namespace s1::qwen3_5
