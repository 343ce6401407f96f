#include "text/byte_level.h"

#include "text/utf8.h"

namespace s1::text::detail {
namespace {

struct Alphabet {
  std::array<std::string, 256> characters;
  // Alphabet characters are all below U+0144.
  std::array<int, 0x144> byte_of{};
};

const Alphabet& alphabet() {
  static const Alphabet table = [] {
    Alphabet result;
    result.byte_of.fill(-1);
    char32_t next_shifted = 0x100;
    for (int byte = 0; byte < 256; ++byte) {
      const bool printable = (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE;
      const char32_t character = printable ? static_cast<char32_t>(byte) : next_shifted++;
      result.characters[static_cast<size_t>(byte)] = std::string(encode_utf8(character).view());
      result.byte_of[character] = byte;
    }
    return result;
  }();
  return table;
}

int byte_of(char32_t character) {
  return character < alphabet().byte_of.size() ? alphabet().byte_of[character] : -1;
}

}  // namespace

const std::array<std::string, 256>& byte_level_alphabet() { return alphabet().characters; }

std::optional<std::string> byte_level_to_bytes(std::string_view token) {
  std::string bytes;
  bytes.reserve(token.size());
  for (size_t position = 0; position < token.size();) {
    const DecodedChar decoded = decode_utf8(token, position);
    const int byte = decoded.valid ? byte_of(decoded.code_point) : -1;
    if (byte < 0) return std::nullopt;
    bytes.push_back(static_cast<char>(byte));
    position += decoded.length;
  }
  return bytes;
}

std::string byte_level_decode(std::string_view token) {
  std::optional<std::string> bytes = byte_level_to_bytes(token);
  return bytes ? std::move(*bytes) : std::string(token);
}

}  // namespace s1::text::detail
