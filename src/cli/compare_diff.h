#pragma once

// The comparison behind `s1serve compare`: are two HTTP responses (one from a worker directly,
// one through a router) identical in status, Content-Type and body bytes, and if not, what is
// the first difference a person should look at.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace s1::cli {

struct ObservedResponse {
  int status = 0;
  std::string content_type;  // "" when the header is absent
  std::string body;
};

struct ResponseComparison {
  bool status_equal = false;
  bool content_type_equal = false;
  bool body_equal = false;
  // Human-readable lines explaining each difference (empty when identical).
  std::vector<std::string> differences;

  bool identical() const { return status_equal && content_type_equal && body_equal; }
};

// Compares field by field; a body difference is explained by the first differing byte with
// context and, when both bodies are JSON, by a member-level diff.
ResponseComparison compare_responses(const ObservedResponse& direct, const ObservedResponse& via);

// Offset of the first byte that differs, or of the end of the shorter input when one is a proper
// prefix of the other; nullopt when equal.
std::optional<size_t> first_difference(std::string_view a, std::string_view b);

// "bodies differ at byte N ..." with up to `context` bytes of the common part before the
// difference and of each side after it. Cuts are moved to UTF-8 boundaries; control bytes and
// invalid UTF-8 are escaped. Empty string when equal.
std::vector<std::string> describe_byte_difference(std::string_view direct, std::string_view via, size_t context = 40);

// Member-level differences between two JSON texts, one line each, addressed by JSON Pointer
// (RFC 6901): "/answers/q1/noul: direct 0.7310585786300049, via 0.5". Member order counts
// (System One fixes it). At most `max_lines` lines, then "... N more". nullopt when either text
// is not JSON.
std::optional<std::vector<std::string>> json_member_diff(std::string_view direct, std::string_view via,
                                                         size_t max_lines = 20);

// Bytes as printable text: valid UTF-8 kept, control characters and invalid bytes escaped.
std::string escape_for_display(std::string_view bytes);

}  // namespace s1::cli
