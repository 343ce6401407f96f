#include "text/tokenizer.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "text/added_tokens.h"
#include "text/json_fields.h"
#include "text/string_map.h"
#include "text/utf8.h"

namespace s1::text {

using detail::ConfigError;

struct Tokenizer::Impl {
  std::unique_ptr<detail::Normalizer> normalizer;
  std::unique_ptr<detail::PreTokenizer> pre_tokenizer;
  std::unique_ptr<detail::Model> model;
  std::unique_ptr<detail::PostProcessor> post_processor;
  std::unique_ptr<detail::Decoder> decoder;
  detail::AddedTokenMatcher raw_matcher;
  detail::AddedTokenMatcher normalized_matcher;
  detail::StringMap<int32_t> added_by_content;
  std::unordered_map<int32_t, std::string> added_by_id;
  std::unordered_set<int32_t> special_added_ids;
  size_t vocab_size = 0;
  SpecialTokenIds special_ids;
  std::optional<FileTruncation> truncation;
  std::optional<FilePadding> padding;

  explicit Impl(const nlohmann::json& root);
  std::vector<int32_t> tokenize_text(std::string_view text) const;
  std::optional<int32_t> token_to_id(std::string_view token) const;
};

namespace {

std::vector<detail::AddedToken> parse_added_tokens(const nlohmann::json& root) {
  std::vector<detail::AddedToken> tokens;
  const auto section = root.find("added_tokens");
  if (section == root.end() || section->is_null()) return tokens;
  if (!section->is_array()) throw ConfigError("added_tokens must be an array");
  constexpr std::string_view component = "added_tokens entry";
  for (const nlohmann::json& entry : *section) {
    detail::AddedToken token;
    token.content = detail::required_field<std::string>(entry, component, "content");
    token.id = detail::required_field<int32_t>(entry, component, "id");
    if (token.id < 0) throw ConfigError("added token '" + token.content + "' has a negative id");
    token.special = detail::optional_field<bool>(entry, component, "special", false);
    token.single_word = detail::optional_field<bool>(entry, component, "single_word", false);
    token.lstrip = detail::optional_field<bool>(entry, component, "lstrip", false);
    token.rstrip = detail::optional_field<bool>(entry, component, "rstrip", false);
    token.normalized = detail::optional_field<bool>(entry, component, "normalized", !token.special);
    tokens.push_back(std::move(token));
  }
  return tokens;
}

std::optional<FileTruncation> parse_truncation(const nlohmann::json& root) {
  const auto section = root.find("truncation");
  if (section == root.end() || section->is_null()) return std::nullopt;
  return FileTruncation{detail::required_field<size_t>(*section, "truncation", "max_length")};
}

std::optional<FilePadding> parse_padding(const nlohmann::json& root) {
  const auto section = root.find("padding");
  if (section == root.end() || section->is_null()) return std::nullopt;
  FilePadding padding;
  padding.pad_id = detail::optional_field<int32_t>(*section, "padding", "pad_id", 0);
  padding.pad_token = detail::optional_field<std::string>(*section, "padding", "pad_token", "[PAD]");
  if (const auto strategy = section->find("strategy"); strategy != section->end() && strategy->is_object()) {
    if (const auto fixed = strategy->find("Fixed"); fixed != strategy->end() && fixed->is_number_unsigned()) {
      padding.fixed_length = fixed->get<size_t>();
    }
  }
  return padding;
}


}  // namespace

Tokenizer::Impl::Impl(const nlohmann::json& root) {
  if (!root.is_object()) throw ConfigError("the top level must be a JSON object");
  const auto section = [&](const char* name) -> const nlohmann::json& {
    static const nlohmann::json null_section;
    const auto found = root.find(name);
    return found == root.end() ? null_section : *found;
  };
  normalizer = detail::make_normalizer(section("normalizer"));
  pre_tokenizer = detail::make_pre_tokenizer(section("pre_tokenizer"));
  model = detail::make_model(section("model"), pre_tokenizer && pre_tokenizer->byte_level());
  post_processor = detail::make_post_processor(section("post_processor"));
  decoder = detail::make_decoder(section("decoder"));
  truncation = parse_truncation(root);
  padding = parse_padding(root);

  std::vector<detail::AddedToken> raw_tokens;
  std::vector<detail::AddedToken> normalized_tokens;
  vocab_size = model->id_limit();
  for (detail::AddedToken& token : parse_added_tokens(root)) {
    added_by_content[token.content] = token.id;
    added_by_id[token.id] = token.content;
    if (token.special) special_added_ids.insert(token.id);
    vocab_size = std::max(vocab_size, static_cast<size_t>(token.id) + 1);
    if (token.normalized && normalizer) {
      token.content = normalizer->normalize(token.content);
      normalized_tokens.push_back(std::move(token));
    } else {
      raw_tokens.push_back(std::move(token));
    }
  }
  raw_matcher = detail::AddedTokenMatcher(std::move(raw_tokens));
  normalized_matcher = detail::AddedTokenMatcher(std::move(normalized_tokens));

  SpecialTokenIds& ids = special_ids;
  ids.unk = model->unk_id();
  if (post_processor) {
    ids.cls = post_processor->cls_id();
    ids.sep = post_processor->sep_id();
  }
  ids.pad = padding ? std::optional<int32_t>(padding->pad_id) : token_to_id("[PAD]");
  ids.mask = token_to_id("[MASK]");
  if (!ids.mask) ids.mask = token_to_id("<mask>");
}


std::optional<int32_t> Tokenizer::Impl::token_to_id(std::string_view token) const {
  if (const auto found = added_by_content.find(token); found != added_by_content.end()) return found->second;
  return model->token_to_id(token);
}

std::vector<int32_t> Tokenizer::Impl::tokenize_text(std::string_view text) const {
  std::vector<int32_t> ids;
  for (const detail::TextPiece& raw_piece : raw_matcher.split(text)) {
    if (raw_piece.id) {
      ids.push_back(*raw_piece.id);
      continue;
    }
    const std::string normalized = normalizer ? normalizer->normalize(raw_piece.text) : std::string(raw_piece.text);
    for (const detail::TextPiece& piece : normalized_matcher.split(normalized)) {
      if (piece.id) {
        ids.push_back(*piece.id);
        continue;
      }
      if (piece.text.empty()) continue;
      std::string rewritten;
      std::string_view piece_text = piece.text;
      if (pre_tokenizer) {
        const bool at_input_start = raw_piece.text.data() == text.data() && piece.text.data() == normalized.data();
        if (std::optional<std::string> rewrite = pre_tokenizer->rewrite(piece.text, at_input_start)) {
          rewritten = std::move(*rewrite);
          piece_text = rewritten;
        }
      }
      const std::vector<std::string_view> words =
          pre_tokenizer ? pre_tokenizer->split(piece_text) : std::vector<std::string_view>{piece_text};
      std::vector<int32_t> word_ids = model->tokenize(words);
      if (ids.empty()) {
        ids = std::move(word_ids);
      } else {
        ids.insert(ids.end(), word_ids.begin(), word_ids.end());
      }
    }
  }
  return ids;
}

Tokenizer Tokenizer::from_file(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw TokenizerLoadError("cannot open tokenizer file " + path.string());
  std::ostringstream contents;
  contents << file.rdbuf();
  if (file.bad()) throw TokenizerLoadError("cannot read tokenizer file " + path.string());
  return from_json(contents.str(), path.string());
}

Tokenizer Tokenizer::from_json(std::string_view json_text, std::string_view source_name) {
  const std::string prefix = "tokenizer " + std::string(source_name) + ": ";
  try {
    return Tokenizer(std::make_unique<const Impl>(nlohmann::json::parse(json_text)));
  } catch (const ConfigError& error) {
    throw TokenizerLoadError(prefix + error.what());
  } catch (const nlohmann::json::exception& error) {
    throw TokenizerLoadError(prefix + "invalid JSON: " + error.what());
  }
}

Tokenizer::Tokenizer(std::unique_ptr<const Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Encoding Tokenizer::encode(std::string_view text, EncodeOptions options) const {
  // Everything downstream assumes valid UTF-8; repair only when needed.
  std::string repaired;
  if (!is_valid_utf8(text)) {
    repaired = to_valid_utf8(text);
    text = repaired;
  }
  Encoding encoding;
  std::vector<int32_t> content = impl_->tokenize_text(text);
  const bool add_special = options.add_special_tokens && impl_->post_processor;
  if (options.max_length > 0) {
    // Like HF, room for the special tokens comes out of max_length first; a max_length smaller
    // than that keeps no content (HF itself would underflow here).
    const size_t reserved = add_special ? impl_->post_processor->added_token_count() : 0;
    const size_t limit = options.max_length > reserved ? options.max_length - reserved : 0;
    if (content.size() > limit) {
      content.resize(limit);
      encoding.truncated = true;
    }
  }
  encoding.ids = add_special ? impl_->post_processor->apply(content) : std::move(content);
  return encoding;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::vector<std::string_view> tokens;
  tokens.reserve(ids.size());
  for (const int32_t id : ids) {
    if (skip_special_tokens && impl_->special_added_ids.contains(id)) continue;
    const std::string_view token = id_to_token(id);
    if (!token.empty()) tokens.push_back(token);
  }
  if (impl_->decoder) return to_valid_utf8(impl_->decoder->decode(tokens));
  std::string text;
  for (const std::string_view token : tokens) {
    if (!text.empty()) text += ' ';
    text += token;
  }
  return text;
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const { return impl_->token_to_id(token); }

std::string_view Tokenizer::id_to_token(int32_t id) const {
  if (const auto found = impl_->added_by_id.find(id); found != impl_->added_by_id.end()) return found->second;
  return impl_->model->id_to_token(id);
}

size_t Tokenizer::vocab_size() const { return impl_->vocab_size; }
const SpecialTokenIds& Tokenizer::special_token_ids() const { return impl_->special_ids; }
const std::optional<FileTruncation>& Tokenizer::file_truncation() const { return impl_->truncation; }
const std::optional<FilePadding>& Tokenizer::file_padding() const { return impl_->padding; }

}  // namespace s1::text
