#include "model/checkpoint/gguf_config.h"

#include <array>
#include <nlohmann/json.hpp>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "model/checkpoint/load_error.h"

namespace s1::checkpoint {
namespace {

// "<architecture>.<key>" → config.json key, as convert_hf_to_gguf.py writes them.
using Key = GgufConfigKey;
constexpr bool kUint = false, kFloat = true;

// TextModel.set_gguf_parameters, shared by both families, in the order it writes them.
constexpr std::array kTextModelKeys{
    Key{"context_length", "max_position_embeddings", kUint},
    Key{"embedding_length", "hidden_size", kUint},
    Key{"block_count", "num_hidden_layers", kUint},
    Key{"feed_forward_length", "intermediate_size", kUint},
    Key{"attention.head_count", "num_attention_heads", kUint},
    Key{"attention.head_count_kv", "num_key_value_heads", kUint},
    Key{"attention.key_length", "head_dim", kUint},
    Key{"rope.freq_base", "rope_theta", kFloat},
    Key{"attention.layer_norm_rms_epsilon", "rms_norm_eps", kFloat},
};

// Qwen3NextModel's additions for the gated-delta layers (ssm.inner_size and the rope keys are
// converted below, not copied).
constexpr std::array kQwen35Keys{
    Key{"ssm.conv_kernel", "linear_conv_kernel_dim", kUint},
    Key{"ssm.state_size", "linear_key_head_dim", kUint},
    Key{"ssm.group_count", "linear_num_key_heads", kUint},
    Key{"ssm.time_step_rank", "linear_num_value_heads", kUint},
    Key{"full_attention_interval", "full_attention_interval", kUint},
};

// LFM2Model: a per-layer head_count_kv (0 for the short-conv layers) replaces layer_types, and
// feed_forward_length is the width after Transformers' auto-adjustment.
constexpr std::array kLfm2Keys{
    Key{"context_length", "max_position_embeddings", kUint},
    Key{"embedding_length", "hidden_size", kUint},
    Key{"feed_forward_length", "intermediate_size", kUint},
    Key{"block_count", "num_hidden_layers", kUint},
    Key{"attention.head_count", "num_attention_heads", kUint},
    Key{"attention.layer_norm_rms_epsilon", "norm_eps", kFloat},
    Key{"rope.freq_base", "rope_theta", kFloat},
    Key{"shortconv.l_cache", "conv_L_cache", kUint},
    Key{"vocab_size", "vocab_size", kUint},
};

class ConfigBuilder {
 public:
  ConfigBuilder(const GgufFile& file, std::string architecture)
      : file_(file), architecture_(std::move(architecture)), prefix_(architecture_ + ".") {}

  void copy(std::span<const Key> keys) {
    for (const Key& key : keys) {
      const std::string name = take(key.gguf);
      if (!key.is_float) {
        if (const auto value = file_.get_uint(name)) config_[std::string(key.config)] = *value;
      } else if (const auto value = file_.get_float(name)) {
        config_[std::string(key.config)] = *value;
      }
    }
  }

  // The name of "<architecture>.<key>", marked as understood.
  std::string take(std::string_view key) {
    std::string name = prefix_ + std::string(key);
    known_.insert(name);
    return name;
  }

  uint64_t config_uint(std::string_view key, std::string_view gguf_key) const {
    if (!config_.contains(key)) file_.fail_key(prefix_ + std::string(gguf_key), "is missing");
    return config_[std::string(key)].get<uint64_t>();
  }

  nlohmann::ordered_json& config() { return config_; }
  const GgufFile& file() const { return file_; }
  const std::string& prefix() const { return prefix_; }

  ConfigReader finish() {
    for (const auto& [key, value] : file_.metadata()) {
      if (key.starts_with(prefix_) && !known_.contains(key) && !key.starts_with(prefix_ + "decision.")) {
        file_.fail_key(key, "is a setting s1serve does not implement for '" + architecture_ + "'");
      }
    }
    const GgufTensor* embedding = file_.find_tensor("token_embd.weight");
    if (embedding == nullptr || embedding->dims.size() != 2) {
      throw LoadError(file_.label + ": tensor 'token_embd.weight' is missing or not 2-D");
    }
    if (config_.contains("vocab_size") && config_["vocab_size"].get<int64_t>() != embedding->dims[1]) {
      file_.fail_key(prefix_ + "vocab_size", "differs from the rows of 'token_embd.weight'");
    }
    config_["vocab_size"] = embedding->dims[1];
    config_["tie_word_embeddings"] = file_.find_tensor("output.weight") == nullptr;
    return ConfigReader(std::move(config_), file_.label + " (GGUF metadata as config.json)");
  }

 private:
  const GgufFile& file_;
  std::string architecture_;
  std::string prefix_;
  nlohmann::ordered_json config_ = nlohmann::ordered_json::object();
  std::set<std::string, std::less<>> known_;
};

// Both families attend with one head size for keys and values.
void check_value_length(ConfigBuilder& builder) {
  const std::string name = builder.take("attention.value_length");
  const auto value = builder.file().get_uint(name);
  if (value && value != builder.config_uint("head_dim", "attention.key_length")) {
    builder.file().fail_key(name, "must equal " + builder.prefix() + "attention.key_length");
  }
}

void add_qwen35_keys(ConfigBuilder& builder) {
  builder.copy(kQwen35Keys);
  const GgufFile& file = builder.file();
  auto& config = builder.config();
  const std::string inner = builder.take("ssm.inner_size");
  if (const auto size = file.get_uint(inner)) {
    const uint64_t heads = builder.config_uint("linear_num_value_heads", "ssm.time_step_rank");
    if (heads == 0 || *size % heads != 0) file.fail_key(inner, "must be a multiple of ssm.time_step_rank");
    config["linear_value_head_dim"] = *size / heads;
  }
  const std::string rotary = builder.take("rope.dimension_count");
  if (const auto dims = file.get_uint(rotary)) {
    const uint64_t head_dim = builder.config_uint("head_dim", "attention.key_length");
    if (head_dim == 0) file.fail_key(builder.prefix() + "attention.key_length", "must be positive");
    config["partial_rotary_factor"] = static_cast<double>(*dims) / static_cast<double>(head_dim);
  }
  // Newer converters list the gated-delta layers (true) explicitly; the list becomes layer_types,
  // which the Qwen3.5 config checks against the layer count.
  const std::string recurrent = builder.take("attention.recurrent_layers");
  if (const GgufValue* value = file.find(recurrent)) {
    const auto* array = std::get_if<GgufArray>(&value->value);
    if (array == nullptr || array->element_type != GgufType::kBool)
      file.fail_key(recurrent, "must be an array of bools");
    std::vector<std::string> layer_types;
    for (const GgufValue& item : array->items) {
      layer_types.emplace_back(std::get<bool>(item.value) ? "linear_attention" : "full_attention");
    }
    config["layer_types"] = layer_types;
  }
  // _Qwen35MRopeMixin writes mrope_section padded with a fourth (temporal-only) zero.
  const std::string sections = builder.take("rope.dimension_sections");
  if (auto values = file.get_ints(sections)) {
    if (values->size() == 4 && values->back() == 0) values->pop_back();
    config["rope_parameters"] = {{"rope_type", "default"}, {"mrope_section", *values}};
  }
}

void add_lfm2_keys(ConfigBuilder& builder) {
  builder.copy(kLfm2Keys);
  auto& config = builder.config();
  config["block_auto_adjust_ff_dim"] = false;
  const std::string kv_heads = builder.take("attention.head_count_kv");
  const auto counts = builder.file().require(builder.file().get_ints(kv_heads), kv_heads);
  std::vector<std::string> layer_types;
  int64_t heads = 0;
  for (const int64_t count : counts) {
    if (count < 0 || (heads != 0 && count != 0 && count != heads)) {
      builder.file().fail_key(kv_heads, "must be 0 (short-conv layers) or one head count (attention layers)");
    }
    if (count != 0) heads = count;
    layer_types.emplace_back(count == 0 ? "conv" : "full_attention");
  }
  if (heads == 0) builder.file().fail_key(kv_heads, "names no attention layer");
  config["num_key_value_heads"] = heads;
  config["layer_types"] = layer_types;
}

}  // namespace

std::span<const GgufConfigKey> gguf_text_model_keys() { return kTextModelKeys; }

ConfigReader gguf_config(const GgufFile& file) {
  const auto architecture = file.require(file.get_string("general.architecture"), "general.architecture");
  if (architecture != "qwen3" && architecture != "qwen35" && architecture != "lfm2") {
    file.fail_key("general.architecture",
                  "is '" + architecture + "'; only 'qwen3', 'qwen35' and 'lfm2' GGUF files load for now");
  }
  ConfigBuilder builder(file, architecture);
  if (architecture == "lfm2") {
    builder.config()["model_type"] = "lfm2";
    add_lfm2_keys(builder);
    return builder.finish();
  }
  builder.config()["model_type"] = architecture == "qwen3" ? "qwen3" : "qwen3_5_text";
  builder.copy(kTextModelKeys);
  check_value_length(builder);
  if (architecture == "qwen35") add_qwen35_keys(builder);
  return builder.finish();
}

}  // namespace s1::checkpoint
