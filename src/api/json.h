#pragma once
// Strict JSON for request bodies (contract §2.1) and exact JSON writing for responses (§3.2).

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <variant>

namespace s1::api {

// Member order is the client's order: prompts render state as sent, legends echo levels as sent.
using Json = nlohmann::ordered_json;

inline constexpr int max_json_depth = 64;

struct JsonSyntaxError {
  std::string message;  // names the reason and byte offset, never echoes input
};

// One RFC 8259 text: no BOM, valid UTF-8, no lone surrogates, no duplicate member names (compared
// after unescaping), no NaN/Infinity or overflowing numbers, depth ≤ 64, nothing after the value.
std::variant<Json, JsonSyntaxError> parse_strict_json(std::string_view text);

// What a text's top level says about one member, for a body forwarded without being built.
struct TopLevelMember {
  enum class Kind { absent, null, string, other };
  Kind kind = Kind::absent;
  std::string text;  // unescaped, when kind is string
};

struct StrictJsonScan {
  bool object = false;  // the text is one JSON object
  TopLevelMember member;
};

// parse_strict_json's verdict and message, without building the document: only the top-level
// member named `member` is kept.
std::variant<StrictJsonScan, JsonSyntaxError> scan_strict_json(std::string_view text, std::string_view member);

// What a parsed document's top level says about `member`, in scan_strict_json's terms.
TopLevelMember top_level_member(const Json& root, std::string_view member);

// Appends `value` as compact JSON: raw non-ASCII, control characters escaped, integers as integers
// and doubles in the shortest round-trip form that always carries '.' or an exponent.
void append_json(std::string& out, const Json& value);
void append_json_string(std::string& out, std::string_view utf8);
void append_json_double(std::string& out, double value);

// Unicode code points in valid UTF-8 text.
size_t count_code_points(std::string_view utf8);
// True when the text has a category Cc code point (U+0000–001F, U+007F–009F).
bool has_control_character(std::string_view utf8);

}  // namespace s1::api
