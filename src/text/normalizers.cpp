#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <new>
#include <string>

#include "text/json_fields.h"
#include "text/regex_split.h"
#include "text/unicode.h"
#include "text/utf8.h"

namespace s1::text::detail {
namespace {

// HF's BertNormalizer: clean_text, then CJK spacing, then NFD with nonspacing marks removed, then
// per-character full lowercase, in that order (the order matters for e.g. U+0130).
class BertNormalizer final : public Normalizer {
 public:
  BertNormalizer(bool clean_text, bool handle_chinese_chars, bool strip_accents, bool lowercase)
      : clean_text_(clean_text),
        handle_chinese_chars_(handle_chinese_chars),
        strip_accents_(strip_accents),
        lowercase_(lowercase) {
    for (char32_t byte = 0; byte < 0x80; ++byte) {
      ascii_[byte] = map_ascii(byte);
    }
  }

  std::string normalize(std::string_view text) const override {
    const bool ascii = std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
    return ascii ? normalize_ascii(text) : normalize_unicode(text);
  }

 private:
  static constexpr int kRemoved = -1;

  // ASCII has no decompositions or marks, so each byte maps to at most one byte.
  int map_ascii(char32_t byte) const {
    if (clean_text_) {
      if (byte == 0 || unicode::is_bert_control(byte)) return kRemoved;
      if (unicode::is_whitespace(byte)) return ' ';
    }
    if (lowercase_ && byte >= 'A' && byte <= 'Z') return static_cast<int>(byte - 'A' + 'a');
    return static_cast<int>(byte);
  }

  std::string normalize_ascii(std::string_view text) const {
    std::string result;
    result.reserve(text.size());
    for (const char c : text) {
      const int mapped = ascii_[static_cast<unsigned char>(c)];
      if (mapped != kRemoved) result.push_back(static_cast<char>(mapped));
    }
    return result;
  }

  std::string normalize_unicode(std::string_view text) const {
    std::u32string chars;
    chars.reserve(text.size() + 8);
    for (size_t position = 0; position < text.size();) {
      const DecodedChar decoded = decode_utf8(text, position);
      position += decoded.length;
      char32_t code_point = decoded.code_point;
      if (clean_text_) {
        if (code_point == 0 || code_point == kReplacementCharacter || unicode::is_bert_control(code_point)) continue;
        if (unicode::is_whitespace(code_point)) code_point = ' ';
      }
      if (handle_chinese_chars_ && unicode::is_chinese_char(code_point)) {
        chars.append({U' ', code_point, U' '});
      } else {
        chars.push_back(code_point);
      }
    }
    if (strip_accents_) chars = strip_accents(chars);
    std::string result;
    result.reserve(chars.size() + 8);
    for (const char32_t code_point : chars) {
      if (!lowercase_) {
        result.append(encode_utf8(code_point).view());
      } else if (code_point == 0x130) {
        // LATIN CAPITAL LETTER I WITH DOT ABOVE lowercases to two characters (SpecialCasing).
        result.append("i\xCC\x87");
      } else {
        result.append(encode_utf8(unicode::to_lower(code_point)).view());
      }
    }
    return result;
  }

  // NFD (decomposition plus canonical reordering) over the whole text, then marks removed;
  // reordering first matters only when marks of different classes surround a spacing mark.
  static std::u32string strip_accents(std::u32string_view chars) {
    std::u32string decomposed;
    decomposed.reserve(chars.size() + 8);
    for (const char32_t code_point : chars) {
      if (code_point < 0xC0) {
        decomposed.push_back(code_point);
        continue;
      }
      const unicode::Decomposition decomposition = unicode::decompose_canonical(code_point);
      for (size_t index = 0; index < decomposition.size; ++index) {
        const char32_t part = decomposition.code_points[index];
        decomposed.push_back(part);
        const int combining_class = unicode::canonical_combining_class(part);
        if (combining_class == 0) continue;
        for (size_t at = decomposed.size() - 1; at > 0; --at) {
          const int previous_class = unicode::canonical_combining_class(decomposed[at - 1]);
          if (previous_class <= combining_class) break;
          std::swap(decomposed[at - 1], decomposed[at]);
        }
      }
    }
    std::erase_if(decomposed, [](char32_t code_point) { return code_point >= 0x300 && unicode::is_nonspacing_mark(code_point); });
    return decomposed;
  }

  bool clean_text_;
  bool handle_chinese_chars_;
  bool strip_accents_;
  bool lowercase_;
  std::array<int, 0x80> ascii_{};
};

bool is_ascii(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// Unicode NFC (Qwen's normaliser). ASCII is already in NFC.
class NfcNormalizer final : public Normalizer {
 public:
  std::string normalize(std::string_view text) const override {
    if (is_ascii(text)) return std::string(text);
    utf8proc_uint8_t* composed = nullptr;
    const utf8proc_ssize_t size = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                               static_cast<utf8proc_ssize_t>(text.size()), &composed,
                                               static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
    // Input is valid UTF-8, so only allocation can fail.
    if (size < 0) throw std::bad_alloc();
    std::string result(reinterpret_cast<const char*>(composed), static_cast<size_t>(size));
    std::free(composed);
    return result;
  }
};

// HF's Replace: every non-overlapping match of a literal or regex pattern, left to right, becomes
// `content` (Gemma's tokenizer spells spaces as "▁" this way).
class ReplaceNormalizer final : public Normalizer {
 public:
  ReplaceNormalizer(std::unique_ptr<RegexMatcher> matcher, std::string content)
      : matcher_(std::move(matcher)), content_(std::move(content)) {}

  std::string normalize(std::string_view text) const override {
    std::string result;
    result.reserve(text.size());
    size_t copied = 0;
    for (const MatchSpan& match : matcher_->find_all(text)) {
      result.append(text.substr(copied, match.begin - copied));
      result.append(content_);
      copied = match.end;
    }
    result.append(text.substr(copied));
    return result;
  }

 private:
  std::unique_ptr<RegexMatcher> matcher_;
  std::string content_;
};

// HF's Prepend: `prepend` in front of any non-empty text (SentencePiece's dummy prefix).
class PrependNormalizer final : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prepend) : prepend_(std::move(prepend)) {}

  std::string normalize(std::string_view text) const override {
    if (text.empty()) return {};
    return prepend_ + std::string(text);
  }

 private:
  std::string prepend_;
};

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> stages) : stages_(std::move(stages)) {}

  std::string normalize(std::string_view text) const override {
    std::string result(text);
    for (const auto& stage : stages_) result = stage->normalize(result);
    return result;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> stages_;
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& section) {
  if (section.is_null()) return nullptr;
  const std::string type = component_type(section, "normalizer");
  if (type == "BertNormalizer") {
    constexpr std::string_view component = "normalizer BertNormalizer";
    const bool lowercase = optional_field<bool>(section, component, "lowercase", true);
    // strip_accents null means "follow lowercase", as in HF.
    const bool strip_accents = optional_field<bool>(section, component, "strip_accents", lowercase);
    return std::make_unique<BertNormalizer>(optional_field<bool>(section, component, "clean_text", true),
                                            optional_field<bool>(section, component, "handle_chinese_chars", true),
                                            strip_accents, lowercase);
  }
  if (type == "NFC") return std::make_unique<NfcNormalizer>();
  if (type == "Replace") {
    constexpr std::string_view component = "normalizer Replace";
    const auto pattern = section.find("pattern");
    if (pattern == section.end() || !pattern->is_object() || pattern->size() != 1) {
      throw ConfigError("normalizer Replace: 'pattern' must be {\"String\": ...} or {\"Regex\": ...}");
    }
    std::string content = required_field<std::string>(section, component, "content");
    if (const auto literal = pattern->find("String"); literal != pattern->end() && literal->is_string()) {
      if (literal->get_ref<const std::string&>().empty()) throw ConfigError("normalizer Replace: empty String pattern");
      return std::make_unique<ReplaceNormalizer>(make_pcre2_matcher(literal->get<std::string>(), true),
                                                 std::move(content));
    }
    if (const auto regex = pattern->find("Regex"); regex != pattern->end() && regex->is_string()) {
      return std::make_unique<ReplaceNormalizer>(make_pcre2_matcher(regex->get<std::string>(), false),
                                                 std::move(content));
    }
    throw ConfigError("normalizer Replace: pattern " + pattern->dump() + " is not supported");
  }
  if (type == "Prepend") {
    return std::make_unique<PrependNormalizer>(required_field<std::string>(section, "normalizer Prepend", "prepend"));
  }
  if (type == "Sequence") {
    const auto stages_json = section.find("normalizers");
    if (stages_json == section.end() || !stages_json->is_array()) {
      throw ConfigError("normalizer Sequence: 'normalizers' must be an array");
    }
    std::vector<std::unique_ptr<Normalizer>> stages;
    for (const nlohmann::json& stage : *stages_json) {
      if (stage.is_null()) throw ConfigError("normalizer Sequence: a stage is null");
      stages.push_back(make_normalizer(stage));
    }
    return std::make_unique<SequenceNormalizer>(std::move(stages));
  }
  throw unsupported("normalizer", type);
}

}  // namespace s1::text::detail
