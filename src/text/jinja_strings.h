#pragma once
// Python str semantics over UTF-8 text, for the template's string methods and filters: lengths,
// indices and slices count code points, whitespace is str.isspace, cases come from utf8proc.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace s1::text::jinja::py {

std::u32string code_points(std::string_view text);
std::string utf8(std::u32string_view text);
size_t length(std::string_view text);

// strip/lstrip/rstrip with chars (nullopt: whitespace).
std::string strip(std::string_view text, const std::optional<std::string>& chars, bool left, bool right);
// split/rsplit(separator, maxsplit); nullopt separator splits on whitespace runs.
std::vector<std::string> split(std::string_view text, const std::optional<std::string>& separator, int64_t max_split,
                               bool from_right);
std::vector<std::string> splitlines(std::string_view text, bool keep_ends);
std::string replace(std::string_view text, std::string_view old_text, std::string_view new_text, int64_t count);
int64_t count(std::string_view text, std::string_view needle);
// The code point index of the first (last) occurrence, or -1.
int64_t find(std::string_view text, std::string_view needle, bool last);

std::string upper(std::string_view text);
std::string lower(std::string_view text);
std::string capitalize(std::string_view text);
// Jinja's title filter: each word (after -, whitespace and opening brackets) capitalised.
std::string title(std::string_view text);

// Every character satisfies the class (and there is at least one), as Python's str.isX.
bool is_space(std::string_view text);
bool is_alpha(std::string_view text);
bool is_digit(std::string_view text);
bool is_alnum(std::string_view text);
// str.isupper / str.islower: at least one cased character and no cased character of the other case.
bool is_upper(std::string_view text);
bool is_lower(std::string_view text);

}  // namespace s1::text::jinja::py
