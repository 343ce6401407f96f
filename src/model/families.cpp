#include "model/families.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "model/bert/bert_model.h"
#include "model/bert/config.h"
#include "model/checkpoint/load_error.h"
#include "model/lfm2/lfm2_model.h"
#include "model/modernbert/config.h"
#include "model/modernbert/modernbert_model.h"
#include "model/qwen3/qwen3_model.h"
#include "model/qwen3_5/qwen3_5_model.h"

namespace s1::model {
namespace {

using checkpoint::LoadError;

// --- the decoder rows ---------------------------------------------------------------------------

struct DecoderFamily {
  std::string_view name;
  std::vector<std::string_view> model_types;
  std::vector<std::string_view> gguf_architectures;  // general.architecture, as llama.cpp's converter writes it
  std::unique_ptr<decoder::CausalDecoder> (*load)(const std::filesystem::path& dir, backend::cpu::Precision precision,
                                                  const DecoderOptions& options);
  bool takes_options = false;  // the DecoderOptions beyond the defaults
};

const std::vector<DecoderFamily>& decoder_families() {
  static const std::vector<DecoderFamily> table{
      {"qwen3",
       {"qwen3"},
       {"qwen3"},
       [](const std::filesystem::path& dir, backend::cpu::Precision precision, const DecoderOptions&) {
         return qwen3::load_qwen3(dir, precision);
       }},
      // The text model and the multimodal wrapper (its text part); Qwen3.8 checkpoints use the same types.
      {"qwen3_5",
       {"qwen3_5", "qwen3_5_text"},
       {"qwen35"},
       [](const std::filesystem::path& dir, backend::cpu::Precision precision, const DecoderOptions& options) {
         return qwen3_5::load_qwen3_5(
             dir, precision, options.noncausal_full_attention,
             options.without_lm_head ? qwen3_5::OutputHead::none : qwen3_5::OutputHead::lm_head, options.adapter);
       },
       true},
      {"lfm2",
       {"lfm2"},
       {"lfm2"},
       [](const std::filesystem::path& dir, backend::cpu::Precision precision, const DecoderOptions&) {
         return lfm2::load_lfm2(dir, precision);
       }},
  };
  return table;
}

// --- the encoder rows ---------------------------------------------------------------------------

template <class Config, class Model>
class Spec final : public encoder::EncoderSpec {
 public:
  Spec(Config config, std::string family)
      : config_(std::move(config)),
        info_{std::move(family), static_cast<std::size_t>(config_.hidden_size),
              static_cast<std::size_t>(config_.vocab_size), static_cast<std::size_t>(config_.max_position_embeddings)} {
  }
  [[nodiscard]] const encoder::EncoderInfo& info() const override { return info_; }
  [[nodiscard]] std::unique_ptr<encoder::Encoder> load(const checkpoint::Checkpoint& weights, const std::string& prefix,
                                                       backend::Arithmetic arithmetic) const override {
    const backend::cpu::Precision precision =
        arithmetic == backend::Arithmetic::bf16 ? backend::cpu::Precision::bf16 : backend::cpu::Precision::fp32;
    if constexpr (std::is_constructible_v<Model, const Config&, const checkpoint::Checkpoint&, backend::cpu::Precision,
                                          const std::string&>) {
      return std::make_unique<Model>(config_, weights, precision, prefix);
    } else {
      // A family that finds its own tensor names (BERT: with or without "bert.") takes no prefix.
      if (!prefix.empty()) {
        throw LoadError(weights.source().string() + ": the " + info_.family +
                        " family reads its tensors at the top level, not under '" + prefix + "'");
      }
      return std::make_unique<Model>(config_, weights, precision);
    }
  }

 private:
  Config config_;
  encoder::EncoderInfo info_;
};

struct EncoderFamily {
  std::string_view name;
  std::vector<std::string_view> model_types;
  std::unique_ptr<encoder::EncoderSpec> (*read)(checkpoint::ConfigReader& config);
};

const std::vector<EncoderFamily>& encoder_families() {
  static const std::vector<EncoderFamily> table{
      {"bert",
       {"bert"},
       [](checkpoint::ConfigReader& config) -> std::unique_ptr<encoder::EncoderSpec> {
         return std::make_unique<Spec<bert::BertConfig, bert::BertEncoder>>(bert::read_bert_config(config), "bert");
       }},
      {"modernbert",
       {"modernbert"},
       [](checkpoint::ConfigReader& config) -> std::unique_ptr<encoder::EncoderSpec> {
         return std::make_unique<Spec<modernbert::ModernBertConfig, modernbert::ModernBertEncoder>>(
             modernbert::read_modernbert_config(config), "modernbert");
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

// The row of `families` that lists model_type, or nullptr.
template <class Family>
const Family* row_for(const std::vector<Family>& families, std::string_view model_type) {
  for (const Family& family : families) {
    for (const std::string_view type : family.model_types) {
      if (type == model_type) return &family;
    }
  }
  return nullptr;
}

template <class Family>
std::string known_model_types(const std::vector<Family>& families) {
  std::string known;
  for (const Family& family : families) {
    for (const std::string_view type : family.model_types) known += (known.empty() ? "" : ", ") + std::string(type);
  }
  return known;
}

template <class Family>
std::optional<std::string> family_of(const std::vector<Family>& families, const std::filesystem::path& dir) {
  const auto model_type = model_type_of(dir);
  if (!model_type) return std::nullopt;
  const Family* family = row_for(families, *model_type);
  if (family == nullptr) return std::nullopt;
  return std::string(family->name);
}

// The row for dir/config.json's model_type; a LoadError naming the known ones otherwise.
template <class Family>
const Family& required_row(const std::vector<Family>& families, const std::filesystem::path& dir,
                           std::string_view kind) {
  const auto model_type = model_type_of(dir);
  if (!model_type) {
    throw LoadError((dir / "config.json").string() + ": missing, not JSON, or without a string \"model_type\"");
  }
  const Family* family = row_for(families, *model_type);
  if (family == nullptr) {
    throw LoadError((dir / "config.json").string() + ": model_type '" + *model_type + "' is not " + std::string(kind) +
                    " s1serve runs (known: " + known_model_types(families) + ")");
  }
  return *family;
}

const DecoderFamily* family_for_gguf(std::string_view architecture) {
  for (const DecoderFamily& family : decoder_families()) {
    for (const std::string_view known : family.gguf_architectures) {
      if (known == architecture) return &family;
    }
  }
  return nullptr;
}

}  // namespace

std::optional<std::string> decoder_family_of_gguf(std::string_view architecture) {
  const DecoderFamily* family = family_for_gguf(architecture);
  if (family == nullptr) return std::nullopt;
  return std::string(family->name);
}

std::string known_gguf_architectures() {
  std::string known;
  for (const DecoderFamily& family : decoder_families()) {
    for (const std::string_view name : family.gguf_architectures)
      known += (known.empty() ? "" : ", ") + std::string(name);
  }
  return known;
}

std::unique_ptr<decoder::CausalDecoder> load_gguf_causal_decoder(const std::filesystem::path& file,
                                                                 std::string_view architecture,
                                                                 backend::cpu::Precision precision) {
  const DecoderFamily* family = family_for_gguf(architecture);
  if (family == nullptr) {
    throw LoadError(file.string() + ": general.architecture '" + std::string(architecture) +
                    "' is not an architecture s1serve runs (known: " + known_gguf_architectures() + ")");
  }
  return family->load(file, precision, {});
}

std::optional<std::string> decoder_family_of(const std::filesystem::path& dir) {
  return family_of(decoder_families(), dir);
}

std::unique_ptr<decoder::CausalDecoder> load_causal_decoder(const std::filesystem::path& dir,
                                                            backend::cpu::Precision precision,
                                                            const DecoderOptions& options) {
  const DecoderFamily& family = required_row(decoder_families(), dir, "a decoder family");
  const bool plain = !options.noncausal_full_attention && !options.without_lm_head && options.adapter == nullptr;
  if (!plain && !family.takes_options) {
    throw LoadError((dir / "config.json").string() + ": the " + std::string(family.name) +
                    " family has no noncausal attention, headless load or unmerged LoRA adapter (qwen3_5 only: "
                    "model_type qwen3_5 or qwen3_5_text)");
  }
  return family.load(dir, precision, options);
}

std::optional<std::string> encoder_family_of(const std::filesystem::path& dir) {
  return family_of(encoder_families(), dir);
}

std::unique_ptr<encoder::EncoderSpec> read_encoder_config(std::string_view model_type,
                                                          checkpoint::ConfigReader& config) {
  const EncoderFamily* family = row_for(encoder_families(), model_type);
  if (family == nullptr) {
    throw LoadError("model_type '" + std::string(model_type) +
                    "' is not an encoder family s1serve runs (known: " + known_model_types(encoder_families()) + ")");
  }
  return family->read(config);
}

std::unique_ptr<encoder::Encoder> load_encoder(const std::filesystem::path& dir, backend::cpu::Precision precision) {
  const EncoderFamily& family = required_row(encoder_families(), dir, "an encoder family");
  checkpoint::ConfigReader config = checkpoint::ConfigReader::from_file(dir / "config.json");
  const std::unique_ptr<encoder::EncoderSpec> spec = family.read(config);
  return spec->load(checkpoint::Checkpoint::open(dir), "", arithmetic_of(precision));
}

backend::Arithmetic arithmetic_of(backend::cpu::Precision precision) {
  return precision == backend::cpu::Precision::bf16 ? backend::Arithmetic::bf16 : backend::Arithmetic::fp32;
}

}  // namespace s1::model
