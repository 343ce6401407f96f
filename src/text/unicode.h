#pragma once
// Character classes of the BERT normaliser and pre-tokeniser and of the Split regex, as HF tokenizers
// computes them.
// Control, punctuation and nonspacing-mark sets come from unicode_tables.inc (measured from HF,
// whose category tables are frozen at an old Unicode version); decomposition and case mapping
// come from utf8proc.

#include <cstddef>

namespace s1::text::unicode {

// Rust's char::is_whitespace (the White_Space property), which HF uses for both stages.
bool is_whitespace(char32_t code_point);
// Removed by BertNormalizer's clean_text (besides U+0000 and U+FFFD, which it removes explicitly).
bool is_bert_control(char32_t code_point);
// Isolated by BertPreTokenizer: ASCII punctuation or a Unicode P* character.
bool is_bert_punctuation(char32_t code_point);
bool is_nonspacing_mark(char32_t code_point);
// The CJK ideograph blocks BertNormalizer surrounds with spaces (HF's ranges, not BERT's).
bool is_chinese_char(char32_t code_point);

// The \p{L}, \p{M}, \p{N} and \s classes of the Oniguruma build behind HF's Split pre-tokeniser
// (measured from HF into unicode_tables.inc), for the hand-written Qwen split.
bool is_regex_letter(char32_t code_point);
bool is_regex_mark(char32_t code_point);
bool is_regex_number(char32_t code_point);
bool is_regex_space(char32_t code_point);

// Python's str.isspace (Unicode White_Space plus U+001C–001F, which Python counts as separators).
bool is_python_space(char32_t code_point);
// Python's str.isprintable: not in categories Cc, Cf, Cs, Co, Cn, Zl, Zp or Zs, except U+0020
// (categories from utf8proc, whose Unicode version may be newer than the Python's being matched).
bool is_python_printable(char32_t code_point);
// Python's str.isdecimal, which re's \d follows for str patterns: category Nd (from utf8proc).
bool is_python_decimal(char32_t code_point);

int canonical_combining_class(char32_t code_point);

// Canonical (NFD) decomposition of one character; utf8proc's longest canonical expansion is 4.
struct Decomposition {
  char32_t code_points[4];
  size_t size;
};
Decomposition decompose_canonical(char32_t code_point);

// Simple lowercase mapping; U+0130, the one character whose full lowercase is two characters,
// is handled by the caller.
char32_t to_lower(char32_t code_point);

}  // namespace s1::text::unicode
