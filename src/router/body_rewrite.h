#pragma once
// Byte-exact edits of a forwarded request body: only the top-level `model` value may change (§7.1).

#include <optional>
#include <string>
#include <string_view>

namespace s1::router {

struct MemberSpan {
  size_t value_begin = 0;  // byte offsets of the member's value in the body
  size_t value_end = 0;
};

// The top-level member named `name` (compared after unescaping) of a body already known to be one
// strict JSON object; nullopt when absent or when the body is not an object.
std::optional<MemberSpan> find_top_level_member(std::string_view body, std::string_view name);

// The body with its top-level `model` set to `model`: the value replaced in place when present,
// else inserted as the first member. Every other byte is kept.
std::string with_model(std::string_view body, std::string_view model);

}  // namespace s1::router
