#include "model/checkpoint/gguf_config.h"

#include <array>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>

#include "model/checkpoint/load_error.h"

namespace s1::checkpoint {
namespace {

enum class Kind { kUint, kFloat };

// "<architecture>.<key>" → config.json key, as convert_hf_to_gguf.py's TextModel writes them.
struct Key {
  std::string_view gguf;
  std::string_view config;
  Kind kind;
};

constexpr std::array kQwen3Keys{
    Key{"context_length", "max_position_embeddings", Kind::kUint},
    Key{"embedding_length", "hidden_size", Kind::kUint},
    Key{"feed_forward_length", "intermediate_size", Kind::kUint},
    Key{"block_count", "num_hidden_layers", Kind::kUint},
    Key{"attention.head_count", "num_attention_heads", Kind::kUint},
    Key{"attention.head_count_kv", "num_key_value_heads", Kind::kUint},
    Key{"attention.key_length", "head_dim", Kind::kUint},
    Key{"attention.layer_norm_rms_epsilon", "rms_norm_eps", Kind::kFloat},
    Key{"rope.freq_base", "rope_theta", Kind::kFloat},
};

}  // namespace

ConfigReader gguf_config(const GgufFile& file) {
  const auto architecture = file.require(file.get_string("general.architecture"), "general.architecture");
  if (architecture != "qwen3") {
    file.fail_key("general.architecture", "is '" + architecture + "'; only 'qwen3' GGUF files load for now");
  }
  const std::string prefix = architecture + ".";
  nlohmann::ordered_json config = {{"model_type", architecture}};
  std::set<std::string, std::less<>> known;
  for (const Key& key : kQwen3Keys) {
    const std::string name = prefix + std::string(key.gguf);
    known.insert(name);
    if (key.kind == Kind::kUint) {
      if (const auto value = file.get_uint(name)) config[std::string(key.config)] = *value;
    } else if (const auto value = file.get_float(name)) {
      config[std::string(key.config)] = *value;
    }
  }
  // Qwen3 attends with one head size for keys and values; a file saying otherwise is not one.
  const std::string value_length = prefix + "attention.value_length";
  known.insert(value_length);
  if (const auto value = file.get_uint(value_length);
      value && (!config.contains("head_dim") || config["head_dim"].get<uint64_t>() != *value)) {
    file.fail_key(value_length, "must equal " + prefix + "attention.key_length");
  }
  for (const auto& [key, value] : file.metadata()) {
    if (key.starts_with(prefix) && !known.contains(key) && !key.starts_with(prefix + "decision.")) {
      file.fail_key(key, "is a setting s1serve does not implement for '" + architecture + "'");
    }
  }
  const GgufTensor* embedding = file.find_tensor("token_embd.weight");
  if (embedding == nullptr || embedding->dims.size() != 2) {
    throw LoadError(file.label + ": tensor 'token_embd.weight' is missing or not 2-D");
  }
  config["vocab_size"] = embedding->dims[1];
  config["tie_word_embeddings"] = file.find_tensor("output.weight") == nullptr;
  return ConfigReader(std::move(config), file.label + " (GGUF metadata as config.json)");
}

}  // namespace s1::checkpoint
