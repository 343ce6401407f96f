#include "text/utf8.h"

namespace s1::text {
namespace {

bool is_continuation(unsigned char byte) { return (byte & 0xC0) == 0x80; }

}  // namespace

DecodedChar decode_utf8(std::string_view text, size_t position) {
  const auto byte_at = [&](size_t offset) { return static_cast<unsigned char>(text[position + offset]); };
  const unsigned char lead = byte_at(0);
  if (lead < 0x80) return {lead, 1, true};
  size_t length = 0;
  char32_t code_point = 0;
  // The second byte's allowed range excludes overlongs, surrogates and values above U+10FFFF.
  unsigned char second_min = 0x80;
  unsigned char second_max = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    code_point = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    code_point = lead & 0x0F;
    if (lead == 0xE0) second_min = 0xA0;
    if (lead == 0xED) second_max = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    code_point = lead & 0x07;
    if (lead == 0xF0) second_min = 0x90;
    if (lead == 0xF4) second_max = 0x8F;
  } else {
    return {kReplacementCharacter, 1, false};
  }
  for (size_t index = 1; index < length; ++index) {
    if (position + index >= text.size()) return {kReplacementCharacter, static_cast<uint8_t>(index), false};
    const unsigned char byte = byte_at(index);
    const bool in_range = index == 1 ? (byte >= second_min && byte <= second_max) : is_continuation(byte);
    if (!in_range) return {kReplacementCharacter, static_cast<uint8_t>(index), false};
    code_point = (code_point << 6) | (byte & 0x3F);
  }
  return {code_point, static_cast<uint8_t>(length), true};
}

bool is_valid_utf8(std::string_view text) {
  size_t position = 0;
  while (position < text.size()) {
    if (static_cast<unsigned char>(text[position]) < 0x80) {
      ++position;
      continue;
    }
    const DecodedChar decoded = decode_utf8(text, position);
    if (!decoded.valid) return false;
    position += decoded.length;
  }
  return true;
}

std::string to_valid_utf8(std::string_view text) {
  std::string result;
  result.reserve(text.size() + 8);
  size_t position = 0;
  while (position < text.size()) {
    const DecodedChar decoded = decode_utf8(text, position);
    if (decoded.valid) {
      result.append(text.substr(position, decoded.length));
    } else {
      result.append(encode_utf8(kReplacementCharacter).view());
    }
    position += decoded.length;
  }
  return result;
}

EncodedChar encode_utf8(char32_t code_point) {
  EncodedChar encoded{};
  if (code_point < 0x80) {
    encoded.bytes[0] = static_cast<char>(code_point);
    encoded.length = 1;
  } else if (code_point < 0x800) {
    encoded.bytes[0] = static_cast<char>(0xC0 | (code_point >> 6));
    encoded.bytes[1] = static_cast<char>(0x80 | (code_point & 0x3F));
    encoded.length = 2;
  } else if (code_point < 0x10000) {
    encoded.bytes[0] = static_cast<char>(0xE0 | (code_point >> 12));
    encoded.bytes[1] = static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    encoded.bytes[2] = static_cast<char>(0x80 | (code_point & 0x3F));
    encoded.length = 3;
  } else {
    encoded.bytes[0] = static_cast<char>(0xF0 | (code_point >> 18));
    encoded.bytes[1] = static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    encoded.bytes[2] = static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    encoded.bytes[3] = static_cast<char>(0x80 | (code_point & 0x3F));
    encoded.length = 4;
  }
  return encoded;
}

}  // namespace s1::text
