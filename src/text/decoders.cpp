#include "text/byte_level.h"
#include "text/json_fields.h"

namespace s1::text::detail {
namespace {

class ByteLevelDecoder final : public Decoder {
 public:
  std::string decode(std::span<const std::string_view> tokens) const override {
    std::string text;
    for (const std::string_view token : tokens) text += byte_level_decode(token);
    return text;
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

  std::string decode(std::span<const std::string_view> tokens) const override {
    std::string text;
    for (size_t index = 0; index < tokens.size(); ++index) {
      std::string token(tokens[index]);
      if (index > 0) token = token.starts_with(prefix_) ? token.substr(prefix_.size()) : " " + token;
      if (cleanup_) token = cleanup(std::move(token));
      text += token;
    }
    return text;
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
  throw unsupported("decoder", type);
}

}  // namespace s1::text::detail
