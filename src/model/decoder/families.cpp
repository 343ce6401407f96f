#include "model/decoder/families.h"

#include <nlohmann/json.hpp>

#include <fstream>

#include "model/checkpoint/load_error.h"
#include "model/lfm2/lfm2_model.h"
#include "model/qwen3/qwen3_model.h"
#include "model/qwen3_5/qwen3_5_model.h"

namespace s1::decoder {
namespace {

struct Family {
  std::string_view name;
  std::vector<std::string_view> model_types;
  std::vector<std::string_view> gguf_architectures;  // general.architecture, as llama.cpp's converter writes it
  std::unique_ptr<CausalDecoder> (*load)(const std::filesystem::path& dir, backend::cpu::Precision precision);
};

const std::vector<Family>& families() {
  static const std::vector<Family> table{
      {"qwen3",
       {"qwen3"},
       {"qwen3"},
       [](const std::filesystem::path& dir, backend::cpu::Precision precision) {
         return qwen3::load_qwen3(dir, precision);
       }},
      // The text model and the multimodal wrapper (its text part); Qwen3.8 checkpoints use the same types.
      {"qwen3_5",
       {"qwen3_5", "qwen3_5_text"},
       {"qwen35"},
       [](const std::filesystem::path& dir, backend::cpu::Precision precision) {
         return qwen3_5::load_qwen3_5(dir, precision);
       }},
      {"lfm2",
       {"lfm2"},
       {"lfm2"},
       [](const std::filesystem::path& dir, backend::cpu::Precision precision) {
         return lfm2::load_lfm2(dir, precision);
       }},
  };
  return table;
}

std::optional<std::string> model_type_of(const std::filesystem::path& dir) {
  std::ifstream in(dir / "config.json", std::ios::binary);
  if (!in) return std::nullopt;
  const auto config = nlohmann::json::parse(in, nullptr, false);
  if (config.is_discarded() || !config.is_object() || !config.contains("model_type") ||
      !config["model_type"].is_string()) {
    return std::nullopt;
  }
  return config["model_type"].get<std::string>();
}

const Family* family_for(const std::string& model_type) {
  for (const Family& family : families()) {
    for (const std::string_view type : family.model_types) {
      if (type == model_type) return &family;
    }
  }
  return nullptr;
}

const Family* family_for_gguf(std::string_view architecture) {
  for (const Family& family : families()) {
    for (const std::string_view known : family.gguf_architectures) {
      if (known == architecture) return &family;
    }
  }
  return nullptr;
}

}  // namespace

std::optional<std::string> decoder_family_of_gguf(std::string_view architecture) {
  const Family* family = family_for_gguf(architecture);
  if (family == nullptr) return std::nullopt;
  return std::string(family->name);
}

std::string known_gguf_architectures() {
  std::string known;
  for (const Family& family : families()) {
    for (const std::string_view name : family.gguf_architectures)
      known += (known.empty() ? "" : ", ") + std::string(name);
  }
  return known;
}

std::unique_ptr<CausalDecoder> load_gguf_causal_decoder(const std::filesystem::path& file,
                                                        std::string_view architecture,
                                                        backend::cpu::Precision precision) {
  const Family* family = family_for_gguf(architecture);
  if (family == nullptr) {
    throw checkpoint::LoadError(file.string() + ": general.architecture '" + std::string(architecture) +
                                "' is not an architecture s1serve runs (known: " + known_gguf_architectures() + ")");
  }
  return family->load(file, precision);
}

std::optional<std::string> decoder_family_of(const std::filesystem::path& dir) {
  const auto model_type = model_type_of(dir);
  if (!model_type) return std::nullopt;
  const Family* family = family_for(*model_type);
  if (family == nullptr) return std::nullopt;
  return std::string(family->name);
}

std::unique_ptr<CausalDecoder> load_causal_decoder(const std::filesystem::path& dir,
                                                   backend::cpu::Precision precision) {
  const auto model_type = model_type_of(dir);
  if (!model_type) {
    throw checkpoint::LoadError((dir / "config.json").string() +
                                ": missing, not JSON, or without a string \"model_type\"");
  }
  const Family* family = family_for(*model_type);
  if (family == nullptr) {
    std::string known;
    for (const Family& entry : families()) {
      for (const std::string_view type : entry.model_types) known += (known.empty() ? "" : ", ") + std::string(type);
    }
    throw checkpoint::LoadError((dir / "config.json").string() + ": model_type '" + *model_type +
                                "' is not a decoder family s1serve runs (known: " + known + ")");
  }
  return family->load(dir, precision);
}

std::unique_ptr<CausalDecoder> load_causal_decoder_with_adapter(const std::filesystem::path& dir,
                                                                backend::cpu::Precision precision,
                                                                const LoraAdapter& adapter) {
  if (decoder_family_of(dir) != "qwen3_5") {
    throw checkpoint::LoadError((dir / "config.json").string() +
                                ": an unmerged LoRA adapter is applied only to the qwen3_5 family (model_type "
                                "qwen3_5 or qwen3_5_text)");
  }
  return qwen3_5::load_qwen3_5(dir, precision, false, qwen3_5::OutputHead::lm_head, &adapter);
}

}  // namespace s1::decoder
