#include "model/modernbert/config.h"

#include <climits>
#include <optional>
#include <string>

namespace s1::modernbert {
namespace {

using checkpoint::ConfigReader;

// One entry of Transformers 5's rope_parameters: plain RoPE only, any scaling is rejected rather
// than run unscaled.
std::optional<double> read_rope_entry(ConfigReader& rope_parameters, std::string_view layer_type) {
  std::optional<ConfigReader> entry = rope_parameters.optional_object(layer_type);
  if (!entry) return std::nullopt;
  if (auto type = entry->optional<std::string>("rope_type"); type && *type != "default") {
    entry->reject("rope_type", "is '" + *type + "'; only default RoPE (no scaling) is supported");
  }
  const double theta = entry->required<double>("rope_theta");
  if (!(theta > 0.0)) entry->reject("rope_theta", "must be positive");
  entry->finish();
  return theta;
}

void read_rope(ConfigReader& reader, ModernBertConfig& config) {
  if (reader.contains("rope_scaling")) reader.reject("rope_scaling", "RoPE scaling is not supported");
  if (std::optional<ConfigReader> rope = reader.optional_object("rope_parameters")) {
    const std::optional<double> global = read_rope_entry(*rope, "full_attention");
    const std::optional<double> local = read_rope_entry(*rope, "sliding_attention");
    rope->finish();
    config.global_rope_theta = global.value_or(reader.optional<double>("global_rope_theta", 160000.0));
    config.local_rope_theta = local.value_or(reader.optional<double>("local_rope_theta", 10000.0));
  } else {
    config.global_rope_theta = reader.optional<double>("global_rope_theta", 160000.0);
    config.local_rope_theta = reader.optional<double>("local_rope_theta", 10000.0);
  }
  // A Transformers 4 checkpoint may still carry the generic key; ModernBERT never reads it.
  reader.ignore({"rope_theta", "global_rope_theta", "local_rope_theta"});
  if (!(config.global_rope_theta > 0.0)) reader.reject("global_rope_theta", "must be positive");
  if (!(config.local_rope_theta > 0.0)) reader.reject("local_rope_theta", "must be positive");
}

// layer_types wins when present (as in Transformers 5); otherwise every n-th layer from 0 is global.
void read_layer_types(ConfigReader& reader, ModernBertConfig& config) {
  const int64_t every = reader.optional<int64_t>("global_attn_every_n_layers", 3);
  reader.require_positive("global_attn_every_n_layers", every);
  if (auto types = reader.optional<std::vector<std::string>>("layer_types")) {
    if (types->size() != static_cast<std::size_t>(config.num_hidden_layers)) {
      reader.reject("layer_types", "must list num_hidden_layers entries");
    }
    for (const std::string& type : *types) {
      if (type == "full_attention") {
        config.layer_types.push_back(LayerType::global);
      } else if (type == "sliding_attention") {
        config.layer_types.push_back(LayerType::local);
      } else {
        reader.reject("layer_types", "'" + type + "' is not supported (full_attention or sliding_attention)");
      }
    }
    return;
  }
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    config.layer_types.push_back(layer % every == 0 ? LayerType::global : LayerType::local);
  }
}

}  // namespace

ModernBertConfig read_modernbert_config(ConfigReader& reader) {
  ModernBertConfig config;
  if (auto model_type = reader.optional<std::string>("model_type"); model_type && *model_type != "modernbert") {
    reader.reject("model_type", "is '" + *model_type + "'; this family loads 'modernbert' checkpoints");
  }
  config.vocab_size = reader.required<int64_t>("vocab_size");
  config.hidden_size = reader.required<int64_t>("hidden_size");
  config.intermediate_size = reader.required<int64_t>("intermediate_size");
  config.num_hidden_layers = reader.required<int64_t>("num_hidden_layers");
  config.num_attention_heads = reader.required<int64_t>("num_attention_heads");
  config.max_position_embeddings = reader.optional<int64_t>("max_position_embeddings", 8192);
  config.norm_eps = reader.optional<double>("norm_eps", 1e-5);
  config.norm_bias = reader.optional<bool>("norm_bias", false);
  config.attention_bias = reader.optional<bool>("attention_bias", false);
  config.mlp_bias = reader.optional<bool>("mlp_bias", false);
  config.local_attention = reader.optional<int64_t>("local_attention", 128);
  reader.require_positive("vocab_size", config.vocab_size);
  reader.require_positive("hidden_size", config.hidden_size);
  reader.require_positive("intermediate_size", config.intermediate_size);
  reader.require_positive("num_hidden_layers", config.num_hidden_layers);
  reader.require_positive("num_attention_heads", config.num_attention_heads);
  reader.require_positive("max_position_embeddings", config.max_position_embeddings);
  reader.require_positive("local_attention", config.local_attention);
  if (config.hidden_size % config.num_attention_heads != 0) {
    reader.reject("num_attention_heads", "must divide hidden_size (" + std::to_string(config.hidden_size) + ")");
  }
  if (config.head_dim() % 2 != 0) reader.reject("num_attention_heads", "must leave an even head size (RoPE pairs)");
  if (config.local_attention < 2) reader.reject("local_attention", "must be at least 2 (the window is ±local_attention/2)");
  if (config.vocab_size > INT32_MAX) reader.reject("vocab_size", "must fit 32-bit token ids");
  if (!(config.norm_eps > 0.0)) reader.reject("norm_eps", "must be positive");
  read_layer_types(reader, config);
  read_rope(reader, config);

  // Settings that change the maths: only the values this family implements are accepted.
  if (auto act = reader.optional<std::string>("hidden_activation"); act && *act != "gelu") {
    reader.reject("hidden_activation", "is '" + *act + "'; only 'gelu' (exact erf GELU) is supported");
  }
  // Dropout, initialisation, task heads (classifier, decoder, sparse prediction), attention
  // backend switches and token ids do not touch the encoder's inference forward pass.
  // position_embedding_type and layer_norm_eps appear in published ModernBERT configs, but the model
  // never reads them (its norms use norm_eps).
  reader.ignore({"architectures", "_name_or_path", "transformers_version", "torch_dtype", "dtype", "model_type",
                 "attention_dropout", "embedding_dropout", "mlp_dropout", "initializer_range",
                 "initializer_cutoff_factor", "classifier_activation", "classifier_bias", "classifier_dropout",
                 "classifier_pooling", "decoder_bias", "sparse_prediction", "sparse_pred_ignore_index",
                 "deterministic_flash_attn", "reference_compile", "repad_logits_with_grad", "gradient_checkpointing",
                 "tie_word_embeddings", "pad_token_id", "bos_token_id", "eos_token_id", "cls_token_id",
                 "sep_token_id", "position_embedding_type", "layer_norm_eps", "id2label", "label2id", "problem_type"});
  reader.finish();
  return config;
}

ModernBertConfig read_modernbert_config(const std::filesystem::path& config_file) {
  ConfigReader reader = ConfigReader::from_file(config_file);
  return read_modernbert_config(reader);
}

}  // namespace s1::modernbert
