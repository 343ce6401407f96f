#pragma once
// UTF-8 decoding and encoding for the text pipeline. Decoding follows the Unicode "maximal subpart"
// rule (the same as Python's bytes.decode(errors="replace") and WHATWG), so invalid input maps to
// the same U+FFFD sequence a Python caller would hand to HF tokenizers.

#include <cstdint>
#include <string>
#include <string_view>

namespace s1::text {

inline constexpr char32_t kReplacementCharacter = 0xFFFD;

struct DecodedChar {
  char32_t code_point;
  // Bytes consumed: the whole character, or the maximal invalid subpart (at least 1).
  uint8_t length;
  bool valid;
};

// Decodes the character starting at text[position]; position must be < text.size().
DecodedChar decode_utf8(std::string_view text, size_t position);

bool is_valid_utf8(std::string_view text);

// Copy of text with each invalid subsequence replaced by U+FFFD.
std::string to_valid_utf8(std::string_view text);

struct EncodedChar {
  char bytes[4];
  uint8_t length;
  std::string_view view() const { return {bytes, length}; }
};

EncodedChar encode_utf8(char32_t code_point);

}  // namespace s1::text
