#include <algorithm>
#include <array>
#include <optional>
#include <string>

#include "text/json_fields.h"
#include "text/regex_split.h"
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

  bool byte_level() const override { return false; }

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

// HF's Split with invert false: matches and the text between them, each match kept apart, dropped
// or joined to a neighbour as `behavior` says.
class SplitPreTokenizer final : public PreTokenizer {
 public:
  SplitPreTokenizer(std::unique_ptr<RegexMatcher> matcher, SplitBehavior behavior)
      : matcher_(std::move(matcher)), behavior_(behavior) {}

  bool byte_level() const override { return false; }
  std::vector<std::string_view> split(std::string_view text) const override {
    return split_with_behavior(text, *matcher_, behavior_);
  }

 private:
  std::unique_ptr<RegexMatcher> matcher_;
  SplitBehavior behavior_;
};

// HF's Metaspace (SentencePiece's whitespace): spaces become `replacement`, which is prepended to a
// piece not already starting with it — always, only at the start of the input ("first"), or never —
// and, with split, each replacement starts a new word (MergedWithNext).
class MetaspacePreTokenizer final : public PreTokenizer {
 public:
  enum class Prepend { always, first, never };

  MetaspacePreTokenizer(std::string replacement, Prepend prepend, bool split)
      : replacement_(std::move(replacement)),
        prepend_(prepend),
        splitter_(split ? make_pcre2_matcher(replacement_, true) : nullptr) {}

  bool byte_level() const override { return false; }
  bool rewrites() const override { return true; }

  std::optional<std::string> rewrite(std::string_view piece, bool at_input_start) const override {
    std::string text;
    text.reserve(piece.size() + replacement_.size());
    for (const char c : piece) {
      if (c == ' ') {
        text += replacement_;
      } else {
        text += c;
      }
    }
    const bool prepend = prepend_ == Prepend::always || (prepend_ == Prepend::first && at_input_start);
    if (prepend && !text.starts_with(replacement_)) text.insert(0, replacement_);
    return text;
  }

  std::vector<std::string_view> split(std::string_view text) const override {
    if (!splitter_) return {text};
    return split_with_behavior(text, *splitter_, SplitBehavior::merged_with_next);
  }

 private:
  std::string replacement_;
  Prepend prepend_;
  std::unique_ptr<RegexMatcher> splitter_;
};

// GPT-2's split, which ByteLevel applies itself when use_regex is true.
constexpr std::string_view kGpt2SplitPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// HF's ByteLevel pre-tokeniser. Its byte-to-alphabet mapping is not done here: the BPE model keys a
// byte-level vocab by raw bytes instead (byte_level() tells it to), which gives the same tokens.
class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  explicit ByteLevelPreTokenizer(std::unique_ptr<RegexMatcher> matcher) : matcher_(std::move(matcher)) {}

  bool byte_level() const override { return true; }
  std::vector<std::string_view> split(std::string_view text) const override {
    if (!matcher_) return {text};
    return split_isolated(text, *matcher_);
  }

 private:
  std::unique_ptr<RegexMatcher> matcher_;
};

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> stages) : stages_(std::move(stages)) {}

  bool byte_level() const override {
    return std::any_of(stages_.begin(), stages_.end(), [](const auto& stage) { return stage->byte_level(); });
  }

  bool rewrites() const override { return !stages_.empty() && stages_.front()->rewrites(); }
  std::optional<std::string> rewrite(std::string_view piece, bool at_input_start) const override {
    if (!rewrites()) return std::nullopt;
    return stages_.front()->rewrite(piece, at_input_start);
  }

  std::vector<std::string_view> split(std::string_view text) const override {
    std::vector<std::string_view> pieces{text};
    for (const auto& stage : stages_) {
      std::vector<std::string_view> next;
      next.reserve(pieces.size());
      for (const std::string_view piece : pieces) {
        for (const std::string_view part : stage->split(piece)) {
          if (!part.empty()) next.push_back(part);
        }
      }
      pieces = std::move(next);
    }
    return pieces;
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> stages_;
};

std::unique_ptr<PreTokenizer> make_split(const nlohmann::json& section) {
  constexpr std::string_view component = "pre_tokenizer Split";
  const auto behavior_name = required_field<std::string>(section, component, "behavior");
  SplitBehavior behavior;
  if (behavior_name == "Isolated") {
    behavior = SplitBehavior::isolated;
  } else if (behavior_name == "Removed") {
    behavior = SplitBehavior::removed;
  } else if (behavior_name == "MergedWithPrevious") {
    behavior = SplitBehavior::merged_with_previous;
  } else if (behavior_name == "MergedWithNext") {
    behavior = SplitBehavior::merged_with_next;
  } else {
    throw ConfigError("pre_tokenizer Split: behavior '" + behavior_name + "' is not supported");
  }
  if (optional_field<bool>(section, component, "invert", false)) {
    throw ConfigError("pre_tokenizer Split: invert true is not supported");
  }
  const auto pattern = section.find("pattern");
  if (pattern == section.end() || !pattern->is_object() || pattern->size() != 1) {
    throw ConfigError("pre_tokenizer Split: 'pattern' must be {\"Regex\": ...} or {\"String\": ...}");
  }
  if (const auto regex = pattern->find("Regex"); regex != pattern->end() && regex->is_string()) {
    const auto& text = regex->get_ref<const std::string&>();
    if (std::unique_ptr<RegexMatcher> known = make_known_matcher(text)) {
      return std::make_unique<SplitPreTokenizer>(std::move(known), behavior);
    }
    return std::make_unique<SplitPreTokenizer>(make_pcre2_matcher(text, false), behavior);
  }
  if (const auto literal = pattern->find("String"); literal != pattern->end() && literal->is_string()) {
    return std::make_unique<SplitPreTokenizer>(make_pcre2_matcher(literal->get<std::string>(), true), behavior);
  }
  throw ConfigError("pre_tokenizer Split: pattern " + pattern->dump() + " is not supported");
}

std::unique_ptr<PreTokenizer> make_byte_level(const nlohmann::json& section) {
  constexpr std::string_view component = "pre_tokenizer ByteLevel";
  if (optional_field<bool>(section, component, "add_prefix_space", true)) {
    throw ConfigError("pre_tokenizer ByteLevel: add_prefix_space true is not supported");
  }
  // trim_offsets only affects offsets, which s1serve does not report.
  if (!optional_field<bool>(section, component, "use_regex", true)) return std::make_unique<ByteLevelPreTokenizer>(nullptr);
  return std::make_unique<ByteLevelPreTokenizer>(make_pcre2_matcher(std::string(kGpt2SplitPattern), false));
}

std::unique_ptr<PreTokenizer> make_metaspace(const nlohmann::json& section) {
  constexpr std::string_view component = "pre_tokenizer Metaspace";
  std::string replacement = required_field<std::string>(section, component, "replacement");
  if (replacement.empty()) throw ConfigError("pre_tokenizer Metaspace: empty replacement");
  MetaspacePreTokenizer::Prepend prepend;
  if (const auto scheme = section.find("prepend_scheme"); scheme != section.end() && !scheme->is_null()) {
    const auto name = required_field<std::string>(section, component, "prepend_scheme");
    if (name == "always") {
      prepend = MetaspacePreTokenizer::Prepend::always;
    } else if (name == "first") {
      prepend = MetaspacePreTokenizer::Prepend::first;
    } else if (name == "never") {
      prepend = MetaspacePreTokenizer::Prepend::never;
    } else {
      throw ConfigError("pre_tokenizer Metaspace: prepend_scheme '" + name + "' is not supported");
    }
  } else {
    // Files older than prepend_scheme say add_prefix_space instead.
    prepend = optional_field<bool>(section, component, "add_prefix_space", true) ? MetaspacePreTokenizer::Prepend::always
                                                                                : MetaspacePreTokenizer::Prepend::never;
  }
  return std::make_unique<MetaspacePreTokenizer>(std::move(replacement), prepend,
                                                 optional_field<bool>(section, component, "split", true));
}

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& section) {
  if (section.is_null()) return nullptr;
  const std::string type = component_type(section, "pre_tokenizer");
  if (type == "BertPreTokenizer") return std::make_unique<BertPreTokenizer>();
  if (type == "Split") return make_split(section);
  if (type == "ByteLevel") return make_byte_level(section);
  if (type == "Metaspace") return make_metaspace(section);
  if (type == "Sequence") {
    const auto stages_json = section.find("pretokenizers");
    if (stages_json == section.end() || !stages_json->is_array()) {
      throw ConfigError("pre_tokenizer Sequence: 'pretokenizers' must be an array");
    }
    std::vector<std::unique_ptr<PreTokenizer>> stages;
    for (const nlohmann::json& stage : *stages_json) {
      if (stage.is_null()) throw ConfigError("pre_tokenizer Sequence: a stage is null");
      // Byte-level words stay raw bytes here, so a later stage would see other text than in HF.
      if (!stages.empty() && stages.back()->byte_level()) {
        throw ConfigError("pre_tokenizer Sequence: a stage after ByteLevel is not supported");
      }
      stages.push_back(make_pre_tokenizer(stage));
      // A rewrite after an earlier split would see words where HF's sees them too, but with offsets
      // s1serve does not track ("first" prepending); only a leading rewriting stage is supported.
      if (stages.size() > 1 && stages.back()->rewrites()) {
        throw ConfigError("pre_tokenizer Sequence: Metaspace is only supported as the first stage");
      }
    }
    return std::make_unique<SequencePreTokenizer>(std::move(stages));
  }
  throw unsupported("pre_tokenizer", type);
}

}  // namespace s1::text::detail
