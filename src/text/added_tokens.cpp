#include "text/added_tokens.h"

#include <utf8proc.h>

#include <algorithm>

#include "text/unicode.h"
#include "text/utf8.h"

namespace s1::text::detail {
namespace {

// Rust regex's \w, which HF uses for single_word boundaries.
bool is_word_char(char32_t code_point) {
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(code_point))) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT: case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return code_point == 0x200C || code_point == 0x200D;
  }
}

bool ends_with_word(std::string_view text) {
  if (text.empty()) return false;
  size_t start = text.size() - 1;
  while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
  return is_word_char(decode_utf8(text, start).code_point);
}

bool starts_with_word(std::string_view text) { return !text.empty() && is_word_char(decode_utf8(text, 0).code_point); }

// Start of the whitespace run that ends text.
size_t trailing_space_start(std::string_view text) {
  size_t run_start = 0;
  for (size_t position = 0; position < text.size();) {
    const DecodedChar decoded = decode_utf8(text, position);
    position += decoded.length;
    if (!unicode::is_whitespace(decoded.code_point)) run_start = position;
  }
  return run_start;
}

size_t leading_space_length(std::string_view text) {
  size_t position = 0;
  while (position < text.size()) {
    const DecodedChar decoded = decode_utf8(text, position);
    if (!unicode::is_whitespace(decoded.code_point)) break;
    position += decoded.length;
  }
  return position;
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  std::erase_if(tokens_, [](const AddedToken& token) { return token.content.empty(); });
  std::stable_sort(tokens_.begin(), tokens_.end(),
                   [](const AddedToken& a, const AddedToken& b) { return a.content.size() > b.content.size(); });
  for (const AddedToken& token : tokens_) first_bytes_[static_cast<unsigned char>(token.content.front())] = true;
}

const AddedToken* AddedTokenMatcher::longest_match_at(std::string_view text, size_t position) const {
  const std::string_view rest = text.substr(position);
  for (const AddedToken& token : tokens_) {
    if (rest.starts_with(token.content)) return &token;
  }
  return nullptr;
}

std::vector<TextPiece> AddedTokenMatcher::split(std::string_view text) const {
  std::vector<TextPiece> pieces;
  size_t consumed = 0;
  size_t position = 0;
  while (position < text.size()) {
    if (!first_bytes_[static_cast<unsigned char>(text[position])]) {
      ++position;
      continue;
    }
    const AddedToken* token = longest_match_at(text, position);
    if (token == nullptr) {
      ++position;
      continue;
    }
    size_t start = position;
    size_t stop = position + token->content.size();
    position = stop;
    if (token->single_word) {
      const bool free_before = start == 0 || !ends_with_word(text.substr(0, start));
      const bool free_after = stop == text.size() || !starts_with_word(text.substr(stop));
      if (!free_before || !free_after) continue;
    }
    if (token->lstrip) start = consumed + trailing_space_start(text.substr(consumed, start - consumed));
    if (token->rstrip) {
      stop += leading_space_length(text.substr(stop));
      position = stop;
    }
    if (start > consumed) pieces.push_back({text.substr(consumed, start - consumed), std::nullopt});
    pieces.push_back({text.substr(start, stop - start), token->id});
    consumed = stop;
  }
  if (consumed < text.size() || pieces.empty()) pieces.push_back({text.substr(consumed), std::nullopt});
  return pieces;
}

}  // namespace s1::text::detail
