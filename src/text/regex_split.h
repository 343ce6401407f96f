#pragma once
// The regex side of HF's Split pre-tokeniser: a pattern from tokenizer.json run with PCRE2 (UTF and
// Unicode-property mode, close to the Oniguruma engine HF uses), and a hand-written matcher for the
// Qwen patterns, exact against HF and several times faster.

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace s1::text::detail {

// A match as [begin, end) byte offsets.
struct MatchSpan {
  size_t begin;
  size_t end;
  bool operator==(const MatchSpan&) const = default;
};

class RegexMatcher {
 public:
  virtual ~RegexMatcher() = default;
  // Non-overlapping matches, left to right, of valid UTF-8 text.
  virtual std::vector<MatchSpan> find_all(std::string_view text) const = 0;
};

// Throws ConfigError when PCRE2 rejects the pattern. A literal pattern matches its text exactly.
std::unique_ptr<RegexMatcher> make_pcre2_matcher(const std::string& pattern, bool literal);

// The spellings tokenizer.json files use (Qwen2/Qwen2.5/Qwen3, and Qwen3.5 which adds \p{M}).
inline constexpr std::string_view kQwen2SplitPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
inline constexpr std::string_view kQwen3_5SplitPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// The hand-written matcher for exactly these patterns; nullptr for any other pattern.
std::unique_ptr<RegexMatcher> make_known_matcher(std::string_view pattern);

// HF's "Isolated" split: matches and the text between them, empty pieces dropped.
std::vector<std::string_view> split_isolated(std::string_view text, const RegexMatcher& matcher);

// HF's SplitDelimiterBehavior: what becomes of each match.
enum class SplitBehavior { isolated, removed, merged_with_previous, merged_with_next };

// HF's NormalizedString::split with `behavior`, empty pieces dropped.
std::vector<std::string_view> split_with_behavior(std::string_view text, const RegexMatcher& matcher,
                                                  SplitBehavior behavior);

}  // namespace s1::text::detail
