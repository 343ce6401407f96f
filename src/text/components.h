#pragma once
// The stages of a tokenizer.json pipeline, one interface each, so new model / normaliser /
// pre-tokeniser / post-processor types plug in without touching the others. Each stage's factory
// reads its section of tokenizer.json and throws ConfigError for anything it does not support.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace s1::text::detail {

// A problem in the JSON content; Tokenizer::from_file adds the file name.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // Input and output are valid UTF-8.
  virtual std::string normalize(std::string_view text) const = 0;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // True when words are to be read as bytes in GPT-2's byte-level alphabet (a ByteLevel stage).
  virtual bool byte_level() const = 0;
  // Words as views into text.
  virtual std::vector<std::string_view> split(std::string_view text) const = 0;
  // The text split() is to see when this stage rewrites a piece first (HF's Metaspace spells spaces
  // as its replacement and may prepend one); nullopt to split the piece as it stands.
  // `at_input_start` says the piece begins the encoded text (HF's offsets_original().0 == 0).
  virtual std::optional<std::string> rewrite(std::string_view /*piece*/, bool /*at_input_start*/) const {
    return std::nullopt;
  }
  virtual bool rewrites() const { return false; }
};

class Model {
 public:
  virtual ~Model() = default;
  virtual std::vector<int32_t> tokenize(std::span<const std::string_view> words) const = 0;
  virtual std::optional<int32_t> token_to_id(std::string_view token) const = 0;
  // Empty for ids the model does not define.
  virtual std::string_view id_to_token(int32_t id) const = 0;
  // One past the largest id.
  virtual size_t id_limit() const = 0;
  virtual std::optional<int32_t> unk_id() const = 0;
};

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // Special tokens the single-sequence template adds (what truncation must leave room for).
  virtual size_t added_token_count() const = 0;
  virtual std::vector<int32_t> apply(std::span<const int32_t> content) const = 0;
  virtual std::optional<int32_t> cls_id() const = 0;
  virtual std::optional<int32_t> sep_id() const = 0;
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  // HF's decode_chain: the token strings after this stage (a Sequence feeds each stage's output to
  // the next); may be invalid UTF-8.
  virtual std::vector<std::string> decode_chain(std::vector<std::string> tokens) const = 0;
  // Text of a token sequence: the chain's pieces joined; may be invalid UTF-8 (the caller repairs it).
  std::string decode(std::span<const std::string_view> tokens) const;
};

// Factories; a null section yields nullptr where HF allows it to be absent.
std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& section);
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& section);
// byte_level: the pre-tokeniser hands over words as bytes for a byte-level vocab.
std::unique_ptr<Model> make_model(const nlohmann::json& section, bool byte_level);
std::unique_ptr<Model> make_bpe(const nlohmann::json& section, bool byte_level);
std::unique_ptr<PostProcessor> make_post_processor(const nlohmann::json& section);
std::unique_ptr<Decoder> make_decoder(const nlohmann::json& section);

}  // namespace s1::text::detail
