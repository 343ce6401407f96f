#include <algorithm>
#include "text/json_fields.h"
#include "text/string_map.h"
#include "text/vocab_model.h"

namespace s1::text::detail {
namespace {

bool is_continuation_byte(char byte) { return (static_cast<unsigned char>(byte) & 0xC0) == 0x80; }

// HF's WordPiece: greedy longest match from the left, "##"-prefixed pieces after the first; a word
// with any unmatched rest, or longer than max_input_chars_per_word characters, becomes unk.
class WordPiece final : public VocabModel {
 public:
  WordPiece(Vocab vocab, const std::string& unk_token, std::string prefix, size_t max_input_chars_per_word)
      : VocabModel(std::move(vocab), "WordPiece"), max_input_chars_per_word_(max_input_chars_per_word) {
    const auto unk = vocab_.find(unk_token);
    if (unk == vocab_.end()) throw ConfigError("model WordPiece: unk_token '" + unk_token + "' is not in the vocab");
    unk_id_ = unk->second;
    for (const auto& [token, id] : vocab_) {
      max_token_bytes_ = std::max(max_token_bytes_, token.size());
      // Continuation pieces are looked up with the prefix already stripped, so matching a suffix
      // of the word needs no string building.
      if (!prefix.empty() && token.starts_with(prefix)) {
        const std::string rest = token.substr(prefix.size());
        continuations_.emplace(rest, id);
        max_continuation_bytes_ = std::max(max_continuation_bytes_, rest.size());
      }
    }
    if (prefix.empty()) {
      continuations_ = vocab_;
      max_continuation_bytes_ = max_token_bytes_;
    }
  }

  std::vector<int32_t> tokenize(std::span<const std::string_view> words) const override {
    std::vector<int32_t> ids;
    ids.reserve(words.size() + words.size() / 2);
    for (const std::string_view word : words) {
      if (too_long(word)) {
        ids.push_back(unk_id_);
        continue;
      }
      const size_t first_piece = ids.size();
      size_t start = 0;
      while (start < word.size()) {
        const bool first = start == 0;
        const Vocab& vocab = first ? vocab_ : continuations_;
        // Nothing longer than the longest vocab entry can match, so start there.
        size_t end = std::min(word.size(), start + (first ? max_token_bytes_ : max_continuation_bytes_));
        while (end > start && end < word.size() && is_continuation_byte(word[end])) --end;
        std::optional<int32_t> piece;
        while (end > start) {
          const auto found = vocab.find(word.substr(start, end - start));
          if (found != vocab.end()) {
            piece = found->second;
            break;
          }
          do --end;
          while (end > start && is_continuation_byte(word[end]));
        }
        if (!piece) break;
        ids.push_back(*piece);
        start = end;
      }
      if (start < word.size()) {
        ids.resize(first_piece);
        ids.push_back(unk_id_);
      }
    }
    return ids;
  }

  std::optional<int32_t> unk_id() const override { return unk_id_; }

 private:
  bool too_long(std::string_view word) const {
    if (word.size() <= max_input_chars_per_word_) return false;
    const auto characters =
        static_cast<size_t>(std::count_if(word.begin(), word.end(), [](char byte) { return !is_continuation_byte(byte); }));
    return characters > max_input_chars_per_word_;
  }

  Vocab continuations_;
  int32_t unk_id_ = 0;
  size_t max_input_chars_per_word_;
  size_t max_token_bytes_ = 0;
  size_t max_continuation_bytes_ = 0;
};

std::unique_ptr<Model> make_word_piece(const nlohmann::json& section) {
  constexpr std::string_view component = "model WordPiece";
  const auto vocab_json = section.find("vocab");
  if (vocab_json == section.end() || !vocab_json->is_object()) {
    throw ConfigError("model WordPiece: 'vocab' must be an object of token -> id");
  }
  Vocab vocab;
  vocab.reserve(vocab_json->size());
  for (const auto& [token, id] : vocab_json->items()) {
    if (!id.is_number_integer()) throw ConfigError("model WordPiece: id of token '" + token + "' is not an integer");
    vocab.emplace(token, id.get<int32_t>());
  }
  const auto max_chars = optional_field<int64_t>(section, component, "max_input_chars_per_word", 100);
  if (max_chars <= 0) throw ConfigError("model WordPiece: max_input_chars_per_word must be positive");
  return std::make_unique<WordPiece>(std::move(vocab), optional_field<std::string>(section, component, "unk_token", "[UNK]"),
                                     optional_field<std::string>(section, component, "continuing_subword_prefix", "##"),
                                     static_cast<size_t>(max_chars));
}

}  // namespace

std::unique_ptr<Model> make_model(const nlohmann::json& section, bool byte_level) {
  if (section.is_null()) throw ConfigError("model section is missing");
  const std::string type = component_type(section, "model");
  if (type == "BPE") return make_bpe(section, byte_level);
  if (type == "WordPiece") {
    if (byte_level) throw ConfigError("model WordPiece after a ByteLevel pre_tokenizer is not supported");
    return make_word_piece(section);
  }
  throw unsupported("model", type);
}

}  // namespace s1::text::detail
