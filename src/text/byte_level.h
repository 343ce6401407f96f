#pragma once
// GPT-2's byte-to-character alphabet, which HF's ByteLevel pre-tokeniser and decoder use: printable
// bytes stand for themselves, the other 68 are shifted to U+0100 and up, so every byte string is a
// string of visible characters.

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace s1::text::detail {

// The character (as UTF-8) standing for each byte.
const std::array<std::string, 256>& byte_level_alphabet();

// The bytes a byte-level token spells; empty when some character is not in the alphabet.
std::optional<std::string> byte_level_to_bytes(std::string_view token);

// HF's ByteLevel decoder for one token: the bytes it spells, or the token's own UTF-8 when any of
// its characters is outside the alphabet. The result may be partial UTF-8 (a character split
// across tokens).
std::string byte_level_decode(std::string_view token);

}  // namespace s1::text::detail
