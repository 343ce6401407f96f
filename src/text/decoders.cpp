#include <optional>
#include <string>
#include <vector>

#include "text/byte_level.h"
#include "text/json_fields.h"
#include "text/regex_split.h"
#include "text/utf8.h"

namespace s1::text::detail {

std::string Decoder::decode(std::span<const std::string_view> tokens) const {
  std::string text;
  for (const std::string& piece : decode_chain(std::vector<std::string>(tokens.begin(), tokens.end()))) text += piece;
  return text;
}

namespace {

class ByteLevelDecoder final : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::string text;
    for (const std::string& token : tokens) text += byte_level_decode(token);
    return {std::move(text)};
  }
};

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// HF's WordPiece decoder: continuation pieces lose their prefix, other pieces get a space, and
// cleanup undoes the tokenisation spaces around punctuation and English contractions.
class WordPieceDecoder final : public Decoder {
 public:
  WordPieceDecoder(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}

  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (size_t index = 0; index < tokens.size(); ++index) {
      std::string& token = tokens[index];
      if (index > 0) token = token.starts_with(prefix_) ? token.substr(prefix_.size()) : " " + token;
      if (cleanup_) token = cleanup(std::move(token));
    }
    return tokens;
  }

 private:
  static std::string cleanup(std::string token) {
    static constexpr std::pair<std::string_view, std::string_view> kReplacements[] = {
        {" .", "."},    {" ?", "?"},       {" !", "!"},         {" ,", ","},     {" ' ", "'"},    {" n't", "n't"},
        {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
    };
    for (const auto& [from, to] : kReplacements) token = replace_all(std::move(token), from, to);
    return token;
  }

  std::string prefix_;
  bool cleanup_;
};

// HF's Replace decoder: each token's matches of a literal or regex pattern become `content`.
class ReplaceDecoder final : public Decoder {
 public:
  ReplaceDecoder(std::unique_ptr<RegexMatcher> matcher, std::string content)
      : matcher_(std::move(matcher)), content_(std::move(content)) {}

  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (std::string& token : tokens) {
      std::string replaced;
      size_t copied = 0;
      for (const MatchSpan& match : matcher_->find_all(token)) {
        replaced.append(token, copied, match.begin - copied);
        replaced += content_;
        copied = match.end;
      }
      replaced.append(token, copied, std::string::npos);
      token = std::move(replaced);
    }
    return tokens;
  }

 private:
  std::unique_ptr<RegexMatcher> matcher_;
  std::string content_;
};

// HF's ByteFallback decoder: runs of "<0xXX>" tokens become the text their bytes spell, or one
// U+FFFD per byte when those bytes are not valid UTF-8.
class ByteFallbackDecoder final : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::vector<std::string> decoded;
    decoded.reserve(tokens.size());
    std::string bytes;
    const auto flush = [&] {
      if (bytes.empty()) return;
      if (is_valid_utf8(bytes)) {
        decoded.push_back(bytes);
      } else {
        for (size_t i = 0; i < bytes.size(); ++i) decoded.emplace_back("\xEF\xBF\xBD");
      }
      bytes.clear();
    };
    for (std::string& token : tokens) {
      if (const std::optional<char> byte = fallback_byte(token)) {
        bytes += *byte;
        continue;
      }
      flush();
      decoded.push_back(std::move(token));
    }
    flush();
    return decoded;
  }

 private:
  static std::optional<char> fallback_byte(std::string_view token) {
    if (token.size() != 6 || !token.starts_with("<0x") || !token.ends_with('>')) return std::nullopt;
    unsigned value = 0;
    for (const char c : token.substr(3, 2)) {
      value <<= 4;
      if (c >= '0' && c <= '9') {
        value |= static_cast<unsigned>(c - '0');
      } else if (c >= 'A' && c <= 'F') {
        value |= static_cast<unsigned>(c - 'A' + 10);
      } else if (c >= 'a' && c <= 'f') {
        value |= static_cast<unsigned>(c - 'a' + 10);
      } else {
        return std::nullopt;
      }
    }
    return static_cast<char>(value);
  }
};

// HF's Fuse decoder: every token joined into one.
class FuseDecoder final : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::string joined;
    for (const std::string& token : tokens) joined += token;
    return {std::move(joined)};
  }
};

// HF's Strip decoder: up to `start` leading and `stop` trailing copies of one character removed
// from each token.
class StripDecoder final : public Decoder {
 public:
  StripDecoder(std::string content, size_t start, size_t stop) : content_(std::move(content)), start_(start), stop_(stop) {}

  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (std::string& token : tokens) {
      std::string_view rest = token;
      for (size_t i = 0; i < start_ && rest.starts_with(content_); ++i) rest.remove_prefix(content_.size());
      for (size_t i = 0; i < stop_ && rest.ends_with(content_); ++i) rest.remove_suffix(content_.size());
      token = std::string(rest);
    }
    return tokens;
  }

 private:
  std::string content_;
  size_t start_, stop_;
};

// HF's Metaspace decoder: the replacement becomes a space, except in the first token when the
// pre-tokeniser prepends one (there it is dropped).
class MetaspaceDecoder final : public Decoder {
 public:
  MetaspaceDecoder(std::string replacement, bool prepends) : replacement_(std::move(replacement)), prepends_(prepends) {}

  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (size_t index = 0; index < tokens.size(); ++index) {
      tokens[index] = replace_all(std::move(tokens[index]), replacement_, index == 0 && prepends_ ? "" : " ");
    }
    return tokens;
  }

 private:
  std::string replacement_;
  bool prepends_;
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> stages) : stages_(std::move(stages)) {}

  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (const auto& stage : stages_) tokens = stage->decode_chain(std::move(tokens));
    return tokens;
  }

 private:
  std::vector<std::unique_ptr<Decoder>> stages_;
};

std::unique_ptr<RegexMatcher> pattern_matcher(const nlohmann::json& section, std::string_view component) {
  const auto pattern = section.find("pattern");
  if (pattern != section.end() && pattern->is_object() && pattern->size() == 1) {
    if (const auto literal = pattern->find("String"); literal != pattern->end() && literal->is_string()) {
      if (!literal->get_ref<const std::string&>().empty()) return make_pcre2_matcher(literal->get<std::string>(), true);
    }
    if (const auto regex = pattern->find("Regex"); regex != pattern->end() && regex->is_string()) {
      return make_pcre2_matcher(regex->get<std::string>(), false);
    }
  }
  throw ConfigError(std::string(component) + ": 'pattern' must be a non-empty {\"String\": ...} or {\"Regex\": ...}");
}

// One character, as HF's char fields are.
std::string single_character(const nlohmann::json& section, std::string_view component, const char* field) {
  std::string value = required_field<std::string>(section, component, field);
  if (value.empty() || decode_utf8(value, 0).length != value.size()) {
    throw ConfigError(std::string(component) + ": '" + field + "' must be one character");
  }
  return value;
}

}  // namespace

std::unique_ptr<Decoder> make_decoder(const nlohmann::json& section) {
  if (section.is_null()) return nullptr;
  const std::string type = component_type(section, "decoder");
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "WordPiece") {
    constexpr std::string_view component = "decoder WordPiece";
    return std::make_unique<WordPieceDecoder>(optional_field<std::string>(section, component, "prefix", "##"),
                                              optional_field<bool>(section, component, "cleanup", true));
  }
  if (type == "Replace") {
    constexpr std::string_view component = "decoder Replace";
    return std::make_unique<ReplaceDecoder>(pattern_matcher(section, component),
                                            required_field<std::string>(section, component, "content"));
  }
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") {
    constexpr std::string_view component = "decoder Strip";
    return std::make_unique<StripDecoder>(single_character(section, component, "content"),
                                          required_field<size_t>(section, component, "start"),
                                          required_field<size_t>(section, component, "stop"));
  }
  if (type == "Metaspace") {
    constexpr std::string_view component = "decoder Metaspace";
    std::string replacement = single_character(section, component, "replacement");
    bool prepends = optional_field<bool>(section, component, "add_prefix_space", true);
    if (const auto scheme = section.find("prepend_scheme"); scheme != section.end() && !scheme->is_null()) {
      const auto name = required_field<std::string>(section, component, "prepend_scheme");
      if (name != "always" && name != "first" && name != "never") {
        throw ConfigError("decoder Metaspace: prepend_scheme '" + name + "' is not supported");
      }
      prepends = name != "never";
    }
    return std::make_unique<MetaspaceDecoder>(std::move(replacement), prepends);
  }
  if (type == "Sequence") {
    const auto stages_json = section.find("decoders");
    if (stages_json == section.end() || !stages_json->is_array()) {
      throw ConfigError("decoder Sequence: 'decoders' must be an array");
    }
    std::vector<std::unique_ptr<Decoder>> stages;
    for (const nlohmann::json& stage : *stages_json) {
      if (stage.is_null()) throw ConfigError("decoder Sequence: a stage is null");
      stages.push_back(make_decoder(stage));
    }
    return std::make_unique<SequenceDecoder>(std::move(stages));
  }
  throw unsupported("decoder", type);
}

}  // namespace s1::text::detail
