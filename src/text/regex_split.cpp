#include "text/regex_split.h"

#include <algorithm>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdexcept>

#include "text/components.h"
#include "text/unicode.h"
#include "text/utf8.h"

namespace s1::text::detail {
namespace {

struct CodeDeleter {
  void operator()(pcre2_code* code) const { pcre2_code_free(code); }
};
struct MatchDataDeleter {
  void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};

class Pcre2Matcher final : public RegexMatcher {
 public:
  Pcre2Matcher(const std::string& pattern, bool literal) {
    int error_code = 0;
    PCRE2_SIZE error_offset = 0;
    // PCRE2 refuses PCRE2_UCP together with PCRE2_LITERAL (a literal has no character classes).
    const uint32_t options =
        PCRE2_UTF | PCRE2_NO_UTF_CHECK | (literal ? PCRE2_LITERAL : static_cast<uint32_t>(PCRE2_UCP));
    code_.reset(pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options, &error_code,
                              &error_offset, nullptr));
    if (!code_) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error_code, message, sizeof message);
      throw ConfigError("pre_tokenizer Split: pattern '" + pattern + "' does not compile at offset " +
                        std::to_string(error_offset) + ": " + reinterpret_cast<const char*>(message));
    }
    // JIT is an optimisation only; without it the interpreter gives the same matches.
    pcre2_jit_compile(code_.get(), PCRE2_JIT_COMPLETE);
  }

  std::vector<MatchSpan> find_all(std::string_view text) const override {
    std::vector<MatchSpan> matches;
    const std::unique_ptr<pcre2_match_data, MatchDataDeleter> data(
        pcre2_match_data_create_from_pattern(code_.get(), nullptr));
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t position = 0;
    while (position <= text.size()) {
      int result = pcre2_match(code_.get(), subject, text.size(), position, PCRE2_NO_UTF_CHECK, data.get(), nullptr);
      if (result < 0 && result != PCRE2_ERROR_NOMATCH) {
        // The JIT's fixed stack can run out on long runs; the interpreter keeps its state on the heap.
        result = pcre2_match(code_.get(), subject, text.size(), position, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, data.get(),
                             nullptr);
      }
      if (result == PCRE2_ERROR_NOMATCH) break;
      if (result < 0) {
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(result, message, sizeof message);
        throw std::runtime_error(std::string("pre_tokenizer Split: regex matching failed: ") +
                                 reinterpret_cast<const char*>(message));
      }
      const PCRE2_SIZE* offsets = pcre2_get_ovector_pointer(data.get());
      const MatchSpan match{offsets[0], offsets[1]};
      if (match.end > match.begin) {
        matches.push_back(match);
        position = match.end;
      } else {
        // An empty match moves the search on by one character.
        if (match.begin >= text.size()) break;
        position = match.begin + decode_utf8(text, match.begin).length;
      }
    }
    return matches;
  }

 private:
  std::unique_ptr<pcre2_code, CodeDeleter> code_;
};

// The Qwen pattern, alternative by alternative, with the backtracking each one implies worked out:
//   (?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n\p{L}\p{N}]?LETTER+ | \p{N} | ' '?OTHER+[\r\n]* |
//   \s*[\r\n]+ | \s+(?!\S) | \s+
// where LETTER is \p{L} (plus \p{M} for Qwen3.5) and OTHER is [^\s\p{L}\p{N}] (minus \p{M}).
class QwenMatcher final : public RegexMatcher {
 public:
  explicit QwenMatcher(bool marks_are_letters) : marks_are_letters_(marks_are_letters) {}

  std::vector<MatchSpan> find_all(std::string_view text) const override {
    std::vector<MatchSpan> matches;
    matches.reserve(text.size() / 4 + 1);
    size_t position = 0;
    while (position < text.size()) {
      const size_t end = match_at(text, position);
      if (end > position) {
        matches.push_back({position, end});
        position = end;
      } else {
        position += char_at(text, position).length;
      }
    }
    return matches;
  }

 private:
  struct Char {
    char32_t code_point;
    size_t length;
    bool letter;  // LETTER as defined above
    bool number;
    bool space;
    bool other;   // OTHER as defined above
    bool prefix;  // [^\r\n\p{L}\p{N}]
    bool newline;
  };

  Char char_at(std::string_view text, size_t position) const {
    const DecodedChar decoded = decode_utf8(text, position);
    const char32_t code_point = decoded.code_point;
    Char result{code_point, decoded.length, false, false, false, false, false, false};
    const bool letter = unicode::is_regex_letter(code_point);
    const bool mark = unicode::is_regex_mark(code_point);
    result.number = unicode::is_regex_number(code_point);
    result.space = unicode::is_regex_space(code_point);
    result.letter = letter || (marks_are_letters_ && mark);
    result.other = !result.space && !result.letter && !result.number;
    result.newline = code_point == '\r' || code_point == '\n';
    result.prefix = !result.newline && !letter && !result.number;
    return result;
  }

  // End of the run of characters with the property, starting at position.
  template <typename Predicate>
  size_t run_end(std::string_view text, size_t position, Predicate predicate) const {
    while (position < text.size()) {
      const Char next = char_at(text, position);
      if (!predicate(next)) break;
      position += next.length;
    }
    return position;
  }

  // 's 't 're 've 'm 'll 'd, case-insensitive; U+017F LONG S folds to s.
  static size_t contraction_end(std::string_view text, size_t position) {
    const std::string_view rest = text.substr(position + 1);
    const auto lower = [&](size_t index) -> char {
      if (index >= rest.size()) return '\0';
      const char byte = rest[index];
      return byte >= 'A' && byte <= 'Z' ? static_cast<char>(byte - 'A' + 'a') : byte;
    };
    if (rest.starts_with("\xC5\xBF")) return position + 3;
    switch (lower(0)) {
      case 's': case 't': case 'm': case 'd':
        return position + 2;
      case 'r': case 'v':
        return lower(1) == 'e' ? position + 3 : 0;
      case 'l':
        return lower(1) == 'l' ? position + 3 : 0;
      default:
        return 0;
    }
  }

  size_t match_at(std::string_view text, size_t position) const {
    const Char first = char_at(text, position);
    const size_t after_first = position + first.length;
    if (first.code_point == '\'') {
      if (const size_t end = contraction_end(text, position)) return end;
    }
    const auto is_letter = [](const Char& c) { return c.letter; };
    if (first.prefix && after_first < text.size() && char_at(text, after_first).letter) {
      return run_end(text, after_first, is_letter);
    }
    if (first.letter) return run_end(text, after_first, is_letter);
    if (first.number) return after_first;
    const auto is_other = [](const Char& c) { return c.other; };
    const auto is_newline = [](const Char& c) { return c.newline; };
    if (first.code_point == ' ' && after_first < text.size() && char_at(text, after_first).other) {
      return run_end(text, run_end(text, after_first, is_other), is_newline);
    }
    if (first.other) return run_end(text, run_end(text, after_first, is_other), is_newline);
    if (!first.space) return position;
    // The whitespace run: up to its last newline if it has one (\s*[\r\n]+), else all of it at
    // the end of the text, else all but its last character (\s+(?!\S)), else that one character.
    size_t end = position;
    size_t after_last_newline = 0;
    size_t last_start = position;
    while (end < text.size()) {
      const Char next = char_at(text, end);
      if (!next.space) break;
      last_start = end;
      end += next.length;
      if (next.newline) after_last_newline = end;
    }
    if (after_last_newline > 0) return after_last_newline;
    if (end == text.size() || last_start == position) return end;
    return last_start;
  }

  bool marks_are_letters_;
};

}  // namespace

std::unique_ptr<RegexMatcher> make_pcre2_matcher(const std::string& pattern, bool literal) {
  return std::make_unique<Pcre2Matcher>(pattern, literal);
}

std::unique_ptr<RegexMatcher> make_known_matcher(std::string_view pattern) {
  if (pattern == kQwen2SplitPattern) return std::make_unique<QwenMatcher>(false);
  if (pattern == kQwen3_5SplitPattern) return std::make_unique<QwenMatcher>(true);
  return nullptr;
}

std::vector<std::string_view> split_isolated(std::string_view text, const RegexMatcher& matcher) {
  std::vector<std::string_view> pieces;
  size_t consumed = 0;
  for (const MatchSpan& match : matcher.find_all(text)) {
    if (match.begin > consumed) pieces.push_back(text.substr(consumed, match.begin - consumed));
    pieces.push_back(text.substr(match.begin, match.end - match.begin));
    consumed = match.end;
  }
  if (consumed < text.size()) pieces.push_back(text.substr(consumed));
  return pieces;
}

std::vector<std::string_view> split_with_behavior(std::string_view text, const RegexMatcher& matcher,
                                                  SplitBehavior behavior) {
  if (behavior == SplitBehavior::isolated) return split_isolated(text, matcher);
  struct Piece {
    size_t begin, end;
    bool match;
  };
  std::vector<Piece> pieces;
  size_t consumed = 0;
  for (const MatchSpan& match : matcher.find_all(text)) {
    if (match.begin > consumed) pieces.push_back({consumed, match.begin, false});
    if (match.end > match.begin) pieces.push_back({match.begin, match.end, true});
    consumed = match.end;
  }
  if (consumed < text.size()) pieces.push_back({consumed, text.size(), false});

  // A match joins its neighbour unless that neighbour is itself a match, as HF's fold does; for
  // merged_with_next the fold runs right to left.
  std::vector<Piece> merged;
  const auto fold = [&](const Piece& piece, bool& previous_match, bool to_next) {
    if (piece.match && !previous_match && !merged.empty()) {
      if (to_next) {
        merged.back().begin = piece.begin;
      } else {
        merged.back().end = piece.end;
      }
    } else {
      merged.push_back({piece.begin, piece.end, false});
    }
    previous_match = piece.match;
  };
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::removed:
      for (const Piece& piece : pieces) {
        if (!piece.match) merged.push_back(piece);
      }
      break;
    case SplitBehavior::merged_with_previous:
      for (const Piece& piece : pieces) fold(piece, previous_match, false);
      break;
    case SplitBehavior::merged_with_next:
      for (auto piece = pieces.rbegin(); piece != pieces.rend(); ++piece) fold(*piece, previous_match, true);
      std::reverse(merged.begin(), merged.end());
      break;
    case SplitBehavior::isolated:
      break;
  }
  std::vector<std::string_view> words;
  words.reserve(merged.size());
  for (const Piece& piece : merged) {
    if (piece.end > piece.begin) words.push_back(text.substr(piece.begin, piece.end - piece.begin));
  }
  return words;
}

}  // namespace s1::text::detail
