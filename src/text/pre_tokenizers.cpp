#include <array>

#include "text/json_fields.h"
#include "text/unicode.h"
#include "text/utf8.h"

namespace s1::text::detail {
namespace {

// HF's BertPreTokenizer: split on whitespace (dropped), then isolate each punctuation character.
class BertPreTokenizer final : public PreTokenizer {
 public:
  BertPreTokenizer() {
    for (char32_t byte = 0; byte < 0x80; ++byte) ascii_[byte] = classify(byte);
  }

  std::vector<std::string_view> split(std::string_view text) const override {
    std::vector<std::string_view> words;
    words.reserve(text.size() / 4 + 1);
    size_t word_start = 0;
    size_t position = 0;
    const auto finish_word = [&](size_t end) {
      if (end > word_start) words.push_back(text.substr(word_start, end - word_start));
    };
    while (position < text.size()) {
      const auto byte = static_cast<unsigned char>(text[position]);
      Kind kind;
      size_t length = 1;
      if (byte < 0x80) {
        kind = ascii_[byte];
      } else {
        const DecodedChar decoded = decode_utf8(text, position);
        length = decoded.length;
        kind = classify(decoded.code_point);
      }
      if (kind == Kind::kWhitespace) {
        finish_word(position);
        word_start = position + length;
      } else if (kind == Kind::kPunctuation) {
        finish_word(position);
        words.push_back(text.substr(position, length));
        word_start = position + length;
      }
      position += length;
    }
    finish_word(position);
    return words;
  }

 private:
  enum class Kind : uint8_t { kWord, kWhitespace, kPunctuation };

  static Kind classify(char32_t code_point) {
    if (unicode::is_whitespace(code_point)) return Kind::kWhitespace;
    if (unicode::is_bert_punctuation(code_point)) return Kind::kPunctuation;
    return Kind::kWord;
  }

  std::array<Kind, 0x80> ascii_{};
};

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& section) {
  if (section.is_null()) return nullptr;
  const std::string type = component_type(section, "pre_tokenizer");
  if (type == "BertPreTokenizer") return std::make_unique<BertPreTokenizer>();
  throw unsupported("pre_tokenizer", type);
}

}  // namespace s1::text::detail
