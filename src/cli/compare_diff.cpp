#include "cli/compare_diff.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

namespace s1::cli {

namespace {

using Json = nlohmann::ordered_json;

// Length of the valid UTF-8 sequence starting at `i`, or 0 when the bytes there are not one.
size_t utf8_sequence_length(std::string_view bytes, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(bytes[k]); };
  const unsigned char lead = byte(i);
  size_t length = 0;
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) length = 2;
  else if (lead >= 0xE0 && lead <= 0xEF) length = 3;
  else if (lead >= 0xF0 && lead <= 0xF4) length = 4;
  else return 0;
  if (i + length > bytes.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  // Overlong forms, surrogates and values past U+10FFFF.
  if (length == 3 && lead == 0xE0 && byte(i + 1) < 0xA0) return 0;
  if (length == 3 && lead == 0xED && byte(i + 1) >= 0xA0) return 0;
  if (length == 4 && lead == 0xF0 && byte(i + 1) < 0x90) return 0;
  if (length == 4 && lead == 0xF4 && byte(i + 1) >= 0x90) return 0;
  return length;
}

bool is_continuation(std::string_view bytes, size_t i) {
  return i < bytes.size() && (static_cast<unsigned char>(bytes[i]) & 0xC0) == 0x80;
}

// Moves a cut point back to the start of the UTF-8 sequence it falls in (at most 3 bytes).
size_t align_back(std::string_view bytes, size_t i) {
  for (int step = 0; step < 3 && i > 0 && is_continuation(bytes, i); ++step) --i;
  return i;
}

// Moves a cut point forward past the continuation bytes of the sequence it falls in.
size_t align_forward(std::string_view bytes, size_t i) {
  for (int step = 0; step < 3 && i < bytes.size() && is_continuation(bytes, i); ++step) ++i;
  return i;
}

std::string pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

std::string show_value(const Json& value) {
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  constexpr size_t limit = 120;
  if (text.size() > limit) text = text.substr(0, align_back(text, limit)) + "…";
  return escape_for_display(text);
}

std::string_view type_name(const Json& value) {
  switch (value.type()) {
    case Json::value_t::object: return "object";
    case Json::value_t::array: return "array";
    case Json::value_t::string: return "string";
    case Json::value_t::boolean: return "boolean";
    case Json::value_t::null: return "null";
    default: return "number";
  }
}

std::string key_list(const Json& object) {
  std::string out = "[";
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (out.size() > 1) out += ",";
    out += Json(it.key()).dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  return escape_for_display(out + "]");
}

void diff_values(const std::string& path, const Json& direct, const Json& via, std::vector<std::string>& out) {
  const std::string where = path.empty() ? "/" : path;
  if (type_name(direct) != type_name(via)) {
    out.push_back(where + ": direct has " + std::string(type_name(direct)) + " " + show_value(direct) + ", via has " +
                  std::string(type_name(via)) + " " + show_value(via));
    return;
  }
  if (direct.is_object()) {
    for (auto it = direct.begin(); it != direct.end(); ++it) {
      const std::string child = path + "/" + pointer_token(it.key());
      if (auto other = via.find(it.key()); other != via.end()) {
        diff_values(child, it.value(), *other, out);
      } else {
        out.push_back(escape_for_display(child) + ": only in direct (" + show_value(it.value()) + ")");
      }
    }
    bool same_keys = direct.size() == via.size();
    for (auto it = via.begin(); it != via.end(); ++it) {
      if (!direct.contains(it.key())) {
        same_keys = false;
        out.push_back(escape_for_display(path + "/" + pointer_token(it.key())) + ": only in via (" +
                      show_value(it.value()) + ")");
      }
    }
    if (same_keys) {
      bool same_order = true;
      for (auto a = direct.begin(), b = via.begin(); a != direct.end(); ++a, ++b) same_order = same_order && a.key() == b.key();
      if (!same_order) {
        out.push_back(escape_for_display(where) + ": member order differs: direct " + key_list(direct) + ", via " +
                      key_list(via));
      }
    }
    return;
  }
  if (direct.is_array()) {
    const size_t common = std::min(direct.size(), via.size());
    for (size_t i = 0; i < common; ++i) diff_values(path + "/" + std::to_string(i), direct[i], via[i], out);
    if (direct.size() != via.size()) {
      out.push_back(escape_for_display(where) + ": direct has " + std::to_string(direct.size()) + " entries, via has " +
                    std::to_string(via.size()));
    }
    return;
  }
  if (direct != via) {
    out.push_back(escape_for_display(where) + ": direct " + show_value(direct) + ", via " + show_value(via));
  }
}

}  // namespace

std::string escape_for_display(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c == '\n') {
      out += "\\n";
      ++i;
    } else if (c == '\r') {
      out += "\\r";
      ++i;
    } else if (c == '\t') {
      out += "\\t";
      ++i;
    } else if (c < 0x20 || c == 0x7F) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\x%02x", c);
      out += buffer;
      ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else if (size_t length = utf8_sequence_length(bytes, i); length > 0) {
      // C1 controls (U+0080–009F) are two-byte sequences starting 0xC2 0x80–0x9F.
      if (c == 0xC2 && static_cast<unsigned char>(bytes[i + 1]) < 0xA0) {
        char buffer[16];
        std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned char>(bytes[i + 1]));
        out += buffer;
      } else {
        out.append(bytes.substr(i, length));
      }
      i += length;
    } else {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\x%02x", c);
      out += buffer;
      ++i;
    }
  }
  return out;
}

std::optional<size_t> first_difference(std::string_view a, std::string_view b) {
  const size_t common = std::min(a.size(), b.size());
  const auto mismatch = std::mismatch(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(common), b.begin());
  const size_t offset = static_cast<size_t>(mismatch.first - a.begin());
  if (offset == common && a.size() == b.size()) return std::nullopt;
  return offset;
}

std::vector<std::string> describe_byte_difference(std::string_view direct, std::string_view via, size_t context) {
  const std::optional<size_t> offset = first_difference(direct, via);
  if (!offset) return {};
  std::vector<std::string> lines;
  lines.push_back("bodies differ from byte " + std::to_string(*offset) + " (direct " + std::to_string(direct.size()) +
                  " bytes, via " + std::to_string(via.size()) + " bytes)");
  // The common prefix is shared, so cut it on direct's UTF-8 boundaries; a difference inside a
  // multi-byte character starts the tails at that character.
  const size_t tail_start = align_back(direct, *offset);
  const size_t prefix_start = align_back(direct, tail_start > context ? tail_start - context : 0);
  const auto tail = [&](std::string_view side) {
    if (tail_start >= side.size()) return std::string("(end of body)");
    const size_t end = align_forward(side, std::min(side.size(), tail_start + context));
    std::string text = escape_for_display(side.substr(tail_start, end - tail_start));
    if (end < side.size()) text += "…";
    return text;
  };
  lines.push_back("  common: " + std::string(prefix_start > 0 ? "…" : "") +
                  escape_for_display(direct.substr(prefix_start, tail_start - prefix_start)));
  lines.push_back("  direct: " + tail(direct));
  lines.push_back("  via:    " + tail(via));
  return lines;
}

std::optional<std::vector<std::string>> json_member_diff(std::string_view direct, std::string_view via,
                                                         size_t max_lines) {
  Json a = Json::parse(direct, nullptr, false);
  Json b = Json::parse(via, nullptr, false);
  if (a.is_discarded() || b.is_discarded()) return std::nullopt;
  std::vector<std::string> lines;
  diff_values("", a, b, lines);
  if (lines.size() > max_lines) {
    const size_t more = lines.size() - max_lines;
    lines.resize(max_lines);
    lines.push_back("... " + std::to_string(more) + " more");
  }
  return lines;
}

ResponseComparison compare_responses(const ObservedResponse& direct, const ObservedResponse& via) {
  ResponseComparison result;
  result.status_equal = direct.status == via.status;
  result.content_type_equal = direct.content_type == via.content_type;
  result.body_equal = direct.body == via.body;
  if (!result.status_equal) {
    result.differences.push_back("status: direct " + std::to_string(direct.status) + ", via " + std::to_string(via.status));
  }
  if (!result.content_type_equal) {
    const auto show = [](const std::string& value) {
      if (value.empty()) return std::string("(none)");
      std::string quoted = "'";  // built in place: GCC 12 -O3 misreports "'" + std::string&& (-Wrestrict)
      quoted += escape_for_display(value);
      quoted += '\'';
      return quoted;
    };
    result.differences.push_back("content-type: direct " + show(direct.content_type) + ", via " + show(via.content_type));
  }
  if (!result.body_equal) {
    for (std::string& line : describe_byte_difference(direct.body, via.body)) result.differences.push_back(std::move(line));
    if (auto members = json_member_diff(direct.body, via.body)) {
      if (members->empty()) {
        result.differences.push_back(
            "  as JSON the bodies are equal: the bytes differ in formatting, number spelling or escaping");
      } else {
        result.differences.push_back("  JSON members that differ:");
        for (std::string& line : *members) result.differences.push_back("    " + line);
      }
    }
  }
  return result;
}

}  // namespace s1::cli
