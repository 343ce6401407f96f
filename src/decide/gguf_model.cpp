#include "decide/gguf_model.h"

#include <optional>
#include <utility>

#include "decide/contracts/label_token.h"
#include "model/checkpoint/config_reader.h"
#include "model/checkpoint/gguf.h"
#include "model/checkpoint/gguf_tokenizer.h"
#include "model/checkpoint/mapped_file.h"
#include "model/decoder/families.h"
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

}  // namespace

std::filesystem::path gguf_decision_file(const std::filesystem::path& gguf_file) {
  return std::filesystem::path(gguf_file).replace_extension(".s1serve.json");
}

LoadedModel load_gguf_model(const std::filesystem::path& file) {
  // The metadata decides everything before the family maps the weights.
  const checkpoint::MappedFile mapped = checkpoint::MappedFile::open(file);
  const checkpoint::GgufFile gguf = checkpoint::parse_gguf(mapped.bytes(), file.string());
  const std::string architecture = gguf.require(gguf.get_string("general.architecture"), "general.architecture");
  if (!decoder::decoder_family_of_gguf(architecture)) {
    gguf.fail_key("general.architecture", "is '" + architecture + "', not an architecture s1serve runs (known: " +
                                              decoder::known_gguf_architectures() + ")");
  }
  // A decision type has its own readout and maths; label-token in its place would answer wrongly.
  const std::string decision_type_key = architecture + ".decision.type";
  if (const auto decision_type = gguf.get_string(decision_type_key)) {
    gguf.fail_key(decision_type_key, "is '" + *decision_type +
                                         "', a decision type s1serve does not implement yet (a GGUF without one is "
                                         "served with the label-token contract)");
  }
  const std::string chat_template = gguf.require(gguf.get_string("tokenizer.chat_template"), "tokenizer.chat_template");
  const text::GgufVocabulary vocabulary = checkpoint::read_gguf_vocabulary(gguf);
  const std::string bos = special_token(gguf, vocabulary, vocabulary.bos_id, "tokenizer.ggml.bos_token_id");
  const std::string eos = special_token(gguf, vocabulary, vocabulary.eos_id, "tokenizer.ggml.eos_token_id");

  const LabelTokenSettings settings = gguf_label_token_settings(file);
  ChatDecoder model{
      text::tokenizer_from_gguf(vocabulary, gguf.label),
      text::ChatTemplate::from_template_text(chat_template, file.string() + " tokenizer.chat_template", bos, eos),
      decoder::load_gguf_causal_decoder(file, architecture, settings.precision),
      file.string() + " tokenizer.ggml.tokens"};
  return LoadedModel{settings.name, settings.aliases, make_label_token_engine(std::move(model), settings)};
}

}  // namespace s1::decide
