#include "model/bert/config.h"

#include "model/checkpoint/config_reader.h"
#include "model/checkpoint/load_error.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

namespace s1::bert {
namespace {

using checkpoint::ConfigReader;
using checkpoint::LoadError;

}  // namespace

BertConfig read_bert_config(const std::filesystem::path& config_file) {
  ConfigReader reader = ConfigReader::from_file(config_file);
  return read_bert_config(reader);
}

BertConfig read_bert_config(ConfigReader& reader) {
  BertConfig config;
  if (auto model_type = reader.optional<std::string>("model_type"); model_type && *model_type != "bert") {
    reader.reject("model_type", "is '" + *model_type + "'; this family loads 'bert' checkpoints");
  }
  config.vocab_size = reader.required<int64_t>("vocab_size");
  config.hidden_size = reader.required<int64_t>("hidden_size");
  config.num_hidden_layers = reader.required<int64_t>("num_hidden_layers");
  config.num_attention_heads = reader.required<int64_t>("num_attention_heads");
  config.intermediate_size = reader.required<int64_t>("intermediate_size");
  config.max_position_embeddings = reader.required<int64_t>("max_position_embeddings");
  config.type_vocab_size = reader.optional<int64_t>("type_vocab_size", 2);
  config.layer_norm_eps = reader.optional<double>("layer_norm_eps", 1e-12);
  reader.require_positive("vocab_size", config.vocab_size);
  reader.require_positive("hidden_size", config.hidden_size);
  reader.require_positive("num_hidden_layers", config.num_hidden_layers);
  reader.require_positive("num_attention_heads", config.num_attention_heads);
  reader.require_positive("intermediate_size", config.intermediate_size);
  reader.require_positive("max_position_embeddings", config.max_position_embeddings);
  reader.require_positive("type_vocab_size", config.type_vocab_size);
  if (config.hidden_size % config.num_attention_heads != 0) {
    reader.reject("num_attention_heads", "must divide hidden_size (" + std::to_string(config.hidden_size) + ")");
  }
  if (!(config.layer_norm_eps > 0.0)) reader.reject("layer_norm_eps", "must be positive");

  // Settings that change the maths: only the values this family implements are accepted.
  if (auto act = reader.optional<std::string>("hidden_act"); act && *act != "gelu") {
    reader.reject("hidden_act", "is '" + *act + "'; only 'gelu' (exact erf GELU) is supported");
  }
  if (auto position = reader.optional<std::string>("position_embedding_type"); position && *position != "absolute") {
    reader.reject("position_embedding_type", "is '" + *position + "'; only 'absolute' is supported");
  }
  if (reader.optional<bool>("is_decoder", false)) reader.reject("is_decoder", "decoder BERT is not supported");
  if (reader.optional<bool>("add_cross_attention", false)) {
    reader.reject("add_cross_attention", "cross-attention is not supported");
  }
  if (reader.optional<int64_t>("chunk_size_feed_forward", 0) != 0) {
    reader.reject("chunk_size_feed_forward", "chunked feed-forward is not supported (0 only)");
  }
  // Token ids, training-only settings and bookkeeping: no effect on an inference forward pass.
  reader.ignore({"architectures", "_name_or_path", "transformers_version", "torch_dtype", "dtype",
                 "attention_probs_dropout_prob", "hidden_dropout_prob", "classifier_dropout",
                 "initializer_range", "gradient_checkpointing", "use_cache", "pad_token_id",
                 "bos_token_id", "eos_token_id", "output_past", "id2label", "label2id", "problem_type",
                 "finetuning_task", "tie_word_embeddings"});
  reader.finish();
  return config;
}

namespace {

nlohmann::ordered_json read_json(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw LoadError(path.string() + ": cannot be read");
  try {
    return nlohmann::ordered_json::parse(in);
  } catch (const nlohmann::json::exception& error) {
    throw LoadError(path.string() + ": not valid JSON (" + error.what() + ")");
  }
}

void read_transformer_module(const std::filesystem::path& dir, const BertConfig& config, SentencePipeline& pipeline) {
  const std::filesystem::path file = dir / "sentence_bert_config.json";
  if (!std::filesystem::exists(file)) {
    throw LoadError(file.string() + ": missing (the Transformer module's max_seq_length is read from it)");
  }
  ConfigReader reader = ConfigReader::from_file(file);
  pipeline.max_seq_length = reader.required<int64_t>("max_seq_length");
  if (pipeline.max_seq_length < 2 || pipeline.max_seq_length > config.max_position_embeddings) {
    reader.reject("max_seq_length", "must be between 2 and max_position_embeddings (" +
                                        std::to_string(config.max_position_embeddings) + ")");
  }
  // do_lower_case makes sentence-transformers lower-case with Python's str.lower() before the
  // tokenizer runs; an uncased tokenizer already lower-cases, so only false is implemented.
  if (reader.optional<bool>("do_lower_case", false)) {
    reader.reject("do_lower_case", "true is not supported (use an uncased tokenizer.json instead)");
  }
  reader.finish();
}

void read_pooling_module(const std::filesystem::path& dir, const BertConfig& config, SentencePipeline& pipeline) {
  ConfigReader reader = ConfigReader::from_file(dir / "config.json");
  pipeline.embedding_dimension = reader.required<int64_t>("word_embedding_dimension");
  if (pipeline.embedding_dimension != config.hidden_size) {
    reader.reject("word_embedding_dimension", "must equal the encoder's hidden_size (" +
                                                  std::to_string(config.hidden_size) + ")");
  }
  if (auto mode = reader.optional<std::string>("pooling_mode"); mode && *mode != "mean") {
    reader.reject("pooling_mode", "is '" + *mode + "'; only mean pooling is supported");
  }
  if (!reader.optional<bool>("pooling_mode_mean_tokens", false)) {
    reader.reject("pooling_mode_mean_tokens", "must be true: only mean pooling is supported");
  }
  for (const std::string_view key : {"pooling_mode_cls_token", "pooling_mode_max_tokens",
                                     "pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens",
                                     "pooling_mode_lasttoken"}) {
    if (reader.optional<bool>(key, false)) reader.reject(key, "only mean pooling is supported");
  }
  // Prompts are never prepended here, so whether pooling includes them changes nothing.
  reader.ignore({"include_prompt"});
  reader.finish();
}

}  // namespace

SentencePipeline read_sentence_pipeline(const std::filesystem::path& model_dir, const BertConfig& config) {
  const std::filesystem::path modules_file = model_dir / "modules.json";
  if (!std::filesystem::exists(modules_file)) {
    throw LoadError(modules_file.string() +
                    ": missing (a sentence-transformers model directory lists its pipeline there)");
  }
  const nlohmann::ordered_json modules = read_json(modules_file);
  if (!modules.is_array()) throw LoadError(modules_file.string() + ": must be a JSON array of modules");

  SentencePipeline pipeline;
  constexpr std::string_view prefix = "sentence_transformers.models.";
  const std::string_view expected[] = {"Transformer", "Pooling", "Normalize"};
  size_t position = 0;
  for (const auto& entry : modules) {
    const std::string source = modules_file.string() + ", module " + std::to_string(position);
    if (!entry.is_object()) throw LoadError(source + ": must be an object");
    ConfigReader reader(entry, source);
    const std::string type = reader.required<std::string>("type");
    const std::string path = reader.optional<std::string>("path", "");
    reader.ignore({"idx", "name", "kwargs"});
    reader.finish();
    const std::string_view short_type =
        std::string_view(type).starts_with(prefix) ? std::string_view(type).substr(prefix.size()) : std::string_view();
    if (position >= std::size(expected) || short_type != expected[position]) {
      throw LoadError(source + ": type '" + type +
                      "' is not supported here; the implemented pipeline is Transformer → Pooling(mean) → "
                      "Normalize (optional)");
    }
    const std::filesystem::path dir = model_dir / path;
    if (short_type == "Transformer") read_transformer_module(dir, config, pipeline);
    if (short_type == "Pooling") read_pooling_module(dir, config, pipeline);
    if (short_type == "Normalize") pipeline.normalize = true;
    ++position;
  }
  if (position < 2) {
    throw LoadError(modules_file.string() + ": needs at least a Transformer and a Pooling module");
  }
  return pipeline;
}

}  // namespace s1::bert
