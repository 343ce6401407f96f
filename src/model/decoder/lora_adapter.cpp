#include "model/decoder/lora_adapter.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>

#include "model/checkpoint/checkpoint.h"
#include "model/checkpoint/load_error.h"

namespace s1::decoder {
namespace {

using checkpoint::LoadError;

constexpr std::string_view key_prefix = "base_model.model.";
constexpr std::string_view a_suffix = ".lora_A.weight";
constexpr std::string_view b_suffix = ".lora_B.weight";

nlohmann::json read_config(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw LoadError(file.string() + ": missing or unreadable (an adapter directory needs it)");
  nlohmann::json config = nlohmann::json::parse(in, nullptr, false);
  if (config.is_discarded() || !config.is_object()) throw LoadError(file.string() + ": not a JSON object");
  return config;
}

// Members that would change the maths if set; absent, null, false, "none", empty all mean off.
void refuse_unsupported(const nlohmann::json& config, const std::filesystem::path& file) {
  const auto fail = [&](const std::string& key, const std::string& why) {
    throw LoadError(file.string() + ": key '" + key + "': " + why);
  };
  if (config.value("peft_type", std::string()) != "LORA") fail("peft_type", "must be \"LORA\"");
  for (const char* key : {"use_dora", "use_rslora", "fan_in_fan_out", "lora_bias", "use_qalora"}) {
    if (config.contains(key) && !config[key].is_null() && !(config[key].is_boolean() && !config[key].get<bool>())) {
      fail(key, "is not supported (plain LoRA only)");
    }
  }
  for (const char* key :
       {"rank_pattern", "alpha_pattern", "modules_to_save", "layer_replication", "target_parameters"}) {
    if (config.contains(key) && !config[key].is_null() && !config[key].empty()) fail(key, "is not supported");
  }
  if (config.contains("bias") && config["bias"] != "none") fail("bias", "must be \"none\"");
}

}  // namespace

LoraAdapter LoraAdapter::from_directory(const std::filesystem::path& dir) {
  const std::filesystem::path config_file = dir / "adapter_config.json";
  const nlohmann::json config = read_config(config_file);
  refuse_unsupported(config, config_file);
  if (!config.contains("r") || !config["r"].is_number_integer() || config["r"].get<int64_t>() < 1) {
    throw LoadError(config_file.string() + ": key 'r': must be a positive integer");
  }
  if (!config.contains("lora_alpha") || !config["lora_alpha"].is_number() ||
      !(config["lora_alpha"].get<double>() > 0)) {
    throw LoadError(config_file.string() + ": key 'lora_alpha': must be a positive number");
  }
  const auto rank = static_cast<std::size_t>(config["r"].get<int64_t>());
  LoraAdapter adapter;
  adapter.source_ = dir / "adapter_model.safetensors";
  // PEFT's scaling for plain LoRA.
  adapter.scale_ = config["lora_alpha"].get<double>() / static_cast<double>(rank);

  const checkpoint::Checkpoint weights = checkpoint::Checkpoint::open(adapter.source_);
  const std::string source = adapter.source_.string();
  for (const checkpoint::TensorView& tensor : weights.tensors()) {
    const std::string_view name = tensor.name;
    const bool is_a = name.ends_with(a_suffix);
    if (!name.starts_with(key_prefix) || !(is_a || name.ends_with(b_suffix))) {
      throw LoadError(source + ": unexpected tensor '" + tensor.name + "' (not a PEFT LoRA A/B weight)");
    }
    if (tensor.shape.size() != 2) throw LoadError(source + ": tensor '" + tensor.name + "' is not 2-D");
    const std::string target =
        std::string(name.substr(key_prefix.size(), name.size() - key_prefix.size() - a_suffix.size())) + ".weight";
    Pair& pair = adapter.pairs_[target];
    const auto rows = static_cast<std::size_t>(tensor.shape[0]);
    const auto columns = static_cast<std::size_t>(tensor.shape[1]);
    if (is_a) {
      if (rows != rank) {
        throw LoadError(source + ": tensor '" + tensor.name + "' has rank " + std::to_string(rows) +
                        ", adapter_config.json says r = " + std::to_string(rank));
      }
      pair.a = checkpoint::to_float(tensor);
      pair.in_features = columns;
    } else {
      if (columns != rank) {
        throw LoadError(source + ": tensor '" + tensor.name + "' has rank " + std::to_string(columns) +
                        ", adapter_config.json says r = " + std::to_string(rank));
      }
      pair.b = checkpoint::to_float(tensor);
      pair.out_features = rows;
    }
    pair.rank = rank;
  }
  for (const auto& [target, pair] : adapter.pairs_) {
    if (pair.a.empty() || pair.b.empty()) {
      throw LoadError(source + ": the LoRA pair of '" + target + "' lacks its " + (pair.a.empty() ? "A" : "B") +
                      " matrix");
    }
    adapter.taken_[target] = false;
  }
  if (adapter.pairs_.empty()) throw LoadError(source + ": no LoRA pairs");
  return adapter;
}

const LoraAdapter::Pair* LoraAdapter::take(const std::string& weight_name) const {
  const auto found = pairs_.find(weight_name);
  if (found == pairs_.end()) return nullptr;
  taken_[weight_name] = true;
  return &found->second;
}

void LoraAdapter::check_all_taken() const {
  for (const auto& [target, taken] : taken_) {
    if (!taken) {
      throw LoadError(source_.string() + ": the LoRA pair of '" + target +
                      "' adapts a weight this decoder does not run; refusing to drop it");
    }
  }
}

std::optional<LowRankDelta> LowRankDelta::make(std::span<const Part> parts, std::size_t in_features, double scale,
                                               std::string_view what) {
  std::size_t total_rank = 0;
  std::size_t total_out = 0;
  for (const Part& part : parts) {
    if (part.pair == nullptr) {
      total_out += part.out_features;
      continue;
    }
    if (part.pair->in_features != in_features || part.pair->out_features != part.out_features) {
      throw LoadError(std::string(what) + ": a LoRA pair of shape [" + std::to_string(part.pair->out_features) + ", " +
                      std::to_string(part.pair->in_features) + "] does not fit its weight [" +
                      std::to_string(part.out_features) + ", " + std::to_string(in_features) + "]");
    }
    total_rank += part.pair->rank;
    total_out += part.out_features;
  }
  if (total_rank == 0) return std::nullopt;
  std::vector<float> down(total_rank * in_features);
  std::vector<float> up(total_out * total_rank, 0.0F);
  std::size_t rank_offset = 0;
  std::size_t row_offset = 0;
  for (const Part& part : parts) {
    if (part.pair != nullptr) {
      const LoraAdapter::Pair& pair = *part.pair;
      std::copy(pair.a.begin(), pair.a.end(), down.begin() + static_cast<std::ptrdiff_t>(rank_offset * in_features));
      for (std::size_t row = 0; row < pair.out_features; ++row) {
        for (std::size_t r = 0; r < pair.rank; ++r) {
          up[(row_offset + row) * total_rank + rank_offset + r] =
              static_cast<float>(scale * static_cast<double>(pair.b[row * pair.rank + r]));
        }
      }
      rank_offset += pair.rank;
    }
    row_offset += part.out_features;
  }
  return LowRankDelta(backend::cpu::PackedLinear(down, {}, in_features, total_rank, backend::cpu::Precision::fp32),
                      backend::cpu::PackedLinear(up, {}, total_rank, total_out, backend::cpu::Precision::fp32));
}

void LowRankDelta::add_to(std::span<const float> x, std::span<float> y) const {
  const std::size_t rows = x.size() / down_.in_features();
  hidden_.resize(rows * down_.out_features());
  down_.forward(x, hidden_);
  up_.forward_accumulate(hidden_, y);
}

}  // namespace s1::decoder
