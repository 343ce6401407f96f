#include "decide/gguf_model.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <utility>
#include <variant>

#include "decide/contract_common.h"
#include "decide/contracts/label_token.h"
#include "decide/gguf_decision.h"
#include "model/checkpoint/config_reader.h"
#include "model/checkpoint/gguf.h"
#include "model/checkpoint/gguf_tokenizer.h"
#include "model/checkpoint/mapped_file.h"
#include "model/families.h"
#include "text/chat_template.h"
#include "text/gguf_vocab.h"

namespace s1::decide {
namespace {

// What {{ bos_token }} / {{ eos_token }} write: the token text of the id the vocabulary names.
std::string special_token(const checkpoint::GgufFile& file, const text::GgufVocabulary& vocabulary,
                          const std::optional<int64_t>& id, std::string_view key) {
  if (!id) return {};
  if (*id < 0 || static_cast<std::size_t>(*id) >= vocabulary.tokens.size()) {
    file.fail_key(key, "is " + std::to_string(*id) + ", not a token id of tokenizer.ggml.tokens");
  }
  return vocabulary.tokens[static_cast<std::size_t>(*id)];
}

LabelTokenSettings gguf_label_token_settings(const std::filesystem::path& file) {
  LabelTokenSettings settings = default_label_token_settings(file);
  settings.name = file.stem().string();
  const std::filesystem::path decision_file = gguf_decision_file(file);
  if (!std::filesystem::exists(decision_file)) return settings;
  checkpoint::ConfigReader reader = checkpoint::ConfigReader::from_file(decision_file);
  const std::string contract = reader.required<std::string>("contract");
  // The other contracts read files of a model directory (heads, exports) that a GGUF does not carry.
  if (contract != label_token_contract) {
    reader.reject("contract", "'" + contract + "' cannot serve a GGUF file (a GGUF is served with label-token)");
  }
  return read_label_token_settings(reader, std::move(settings));
}

// The decision types llama.cpp defines that s1serve does not serve yet: a load error names them
// rather than calling them unknown.
constexpr std::string_view kUnservedDecisionTypes[] = {"kev", "laya", "clef", "lfm2-d1-omni"};

std::optional<double> number_value(const checkpoint::GgufValue& value) {
  if (const auto* number = std::get_if<double>(&value.value)) return *number;
  if (const auto* number = std::get_if<int64_t>(&value.value)) return static_cast<double>(*number);
  if (const auto* number = std::get_if<uint64_t>(&value.value)) return static_cast<double>(*number);
  return std::nullopt;
}

GgufDecisionSettings gguf_decision_settings(const std::filesystem::path& file, const checkpoint::GgufFile& gguf,
                                            const std::string& architecture, GgufDecisionType type) {
  GgufDecisionSettings settings;
  settings.name = file.stem().string();
  settings.description = "GGUF decision model (" + std::string(gguf_decision_type_name(type)) + " decision type)";
  settings.type = type;
  settings.precision = default_linear_precision();
  const std::string prefix = architecture + ".decision.temperature.";
  for (const auto& [key, value] : gguf.metadata()) {
    if (!key.starts_with(prefix)) continue;
    const auto temperature = number_value(value);
    if (!temperature || !(*temperature > 0.0)) gguf.fail_key(key, "must be a number above 0");
    settings.temperatures[key.substr(prefix.size())] = *temperature;
  }
  const std::filesystem::path decision_file = gguf_decision_file(file);
  if (!std::filesystem::exists(decision_file)) return settings;
  checkpoint::ConfigReader reader = checkpoint::ConfigReader::from_file(decision_file);
  // The GGUF's metadata already says how it decides; a decision file only names and places it.
  if (const auto contract = reader.optional<std::string>("contract");
      contract && *contract != gguf_decision_type_name(type)) {
    reader.reject("contract", "'" + *contract + "' cannot serve this GGUF file: its " + architecture +
                                  ".decision.type is '" + std::string(gguf_decision_type_name(type)) + "'");
  }
  read_served_model_identity(reader, settings);
  settings.precision = read_precision(reader, settings.precision);
  settings.context_tokens = read_context_tokens(reader);
  reader.finish();
  return settings;
}

}  // namespace

std::filesystem::path gguf_decision_file(const std::filesystem::path& gguf_file) {
  return std::filesystem::path(gguf_file).replace_extension(".s1serve.json");
}

LoadedModel load_gguf_model(const std::filesystem::path& file) {
  // The metadata decides everything before the family maps the weights.
  const checkpoint::MappedFile mapped = checkpoint::MappedFile::open(file);
  const checkpoint::GgufFile gguf = checkpoint::parse_gguf(mapped.bytes(), file.string());
  const std::string architecture = gguf.require(gguf.get_string("general.architecture"), "general.architecture");
  if (!model::decoder_family_of_gguf(architecture)) {
    gguf.fail_key("general.architecture", "is '" + architecture + "', not an architecture s1serve runs (known: " +
                                              model::known_gguf_architectures() + ")");
  }
  // A decision type has its own readout and maths; label-token in its place would answer wrongly.
  const std::string decision_type_key = architecture + ".decision.type";
  std::optional<GgufDecisionType> decision_type;
  if (const auto type_name = gguf.get_string(decision_type_key)) {
    decision_type = gguf_decision_type_named(*type_name);
    if (!decision_type) {
      const bool known = std::find(std::begin(kUnservedDecisionTypes), std::end(kUnservedDecisionTypes), *type_name) !=
                         std::end(kUnservedDecisionTypes);
      gguf.fail_key(decision_type_key, "is '" + *type_name + "', " +
                                           (known ? "a decision type s1serve does not implement yet"
                                                  : "not a decision type llama.cpp or s1serve knows") +
                                           " (served: openjev, lev, nimble, pplx-decider, lfm2-d1)");
    }
  }
  const std::string template_key = decision_type ? "tokenizer.chat_template.systemone" : "tokenizer.chat_template";
  const std::string chat_template = gguf.require(gguf.get_string(template_key), template_key);
  std::optional<GgufDecisionSettings> decision_settings;
  if (decision_type) decision_settings = gguf_decision_settings(file, gguf, architecture, *decision_type);
  const text::GgufVocabulary vocabulary = checkpoint::read_gguf_vocabulary(gguf);
  const std::string bos = special_token(gguf, vocabulary, vocabulary.bos_id, "tokenizer.ggml.bos_token_id");
  const std::string eos = special_token(gguf, vocabulary, vocabulary.eos_id, "tokenizer.ggml.eos_token_id");
  const auto chat_decoder = [&](backend::cpu::Precision precision) {
    return ChatDecoder{
        text::tokenizer_from_gguf(vocabulary, gguf.label),
        text::ChatTemplate::from_template_text(chat_template, file.string() + " " + template_key, bos, eos),
        model::load_gguf_causal_decoder(file, architecture, precision), file.string() + " tokenizer.ggml.tokens"};
  };
  if (decision_settings) {
    ChatDecoder model = chat_decoder(decision_settings->precision);
    std::string name = decision_settings->name;
    std::vector<std::string> aliases = decision_settings->aliases;
    return LoadedModel{std::move(name), std::move(aliases),
                       make_gguf_decision_engine(std::move(model), std::move(*decision_settings))};
  }
  const LabelTokenSettings settings = gguf_label_token_settings(file);
  return LoadedModel{settings.name, settings.aliases,
                     make_label_token_engine(chat_decoder(settings.precision), settings)};
}

}  // namespace s1::decide
