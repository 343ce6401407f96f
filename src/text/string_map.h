#pragma once
// Hash map keyed by std::string that can be searched with a std::string_view (no temporary string
// per lookup, which matters in the WordPiece inner loop).

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace s1::text::detail {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const noexcept { return std::hash<std::string_view>{}(text); }
};

template <typename Value>
using StringMap = std::unordered_map<std::string, Value, StringHash, std::equal_to<>>;

}  // namespace s1::text::detail
