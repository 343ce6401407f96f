#pragma once
// Added tokens (tokenizer.json "added_tokens"): found in the text before the model sees it, the way
// HF's AddedVocabulary does (leftmost-longest, non-overlapping, with single_word/lstrip/rstrip).

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace s1::text::detail {

struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  // Matched on normalised text (content normalised too) rather than on the raw input.
  bool normalized = false;
};

// A run of text, or an added token when id is set.
struct TextPiece {
  std::string_view text;
  std::optional<int32_t> id;
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  explicit AddedTokenMatcher(std::vector<AddedToken> tokens);

  bool empty() const { return tokens_.empty(); }
  std::vector<TextPiece> split(std::string_view text) const;

 private:
  const AddedToken* longest_match_at(std::string_view text, size_t position) const;

  std::vector<AddedToken> tokens_;  // longest content first
  std::array<bool, 256> first_bytes_{};
};

}  // namespace s1::text::detail
