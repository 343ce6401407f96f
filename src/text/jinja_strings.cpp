#include "text/jinja_strings.h"

#include <utf8proc.h>

#include <algorithm>

#include "text/jinja_value.h"
#include "text/unicode.h"
#include "text/utf8.h"

namespace s1::text::jinja::py {

std::u32string code_points(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    const DecodedChar decoded = decode_utf8(text, at);
    out.push_back(decoded.code_point);
    at += decoded.length;
  }
  return out;
}

std::string utf8(std::u32string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char32_t c : text) out += encode_utf8(c).view();
  return out;
}

size_t length(std::string_view text) {
  size_t count = 0;
  for (const char c : text) count += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  return count;
}

std::string strip(std::string_view text, const std::optional<std::string>& chars, bool left, bool right) {
  // Walks in from the ends over whole characters, so the middle of a long content is never decoded
  // (templates trim every message).
  const std::u32string set = chars ? code_points(*chars) : std::u32string();
  const auto strippable = [&](char32_t c) {
    return chars ? set.find(c) != std::u32string::npos : unicode::is_python_space(c);
  };
  size_t begin = 0;
  size_t end = text.size();
  while (left && begin < end) {
    const DecodedChar decoded = decode_utf8(text, begin);
    if (!strippable(decoded.code_point)) break;
    begin += decoded.length;
  }
  while (right && end > begin) {
    size_t start = end - 1;
    while (start > begin && (static_cast<unsigned char>(text[start]) & 0xc0) == 0x80) --start;
    const DecodedChar decoded = decode_utf8(text, start);
    if (decoded.length != end - start || !strippable(decoded.code_point)) break;
    end = start;
  }
  return std::string(text.substr(begin, end - begin));
}

std::vector<std::string> split(std::string_view text, const std::optional<std::string>& separator, int64_t max_split,
                               bool from_right) {
  std::vector<std::string> parts;
  if (separator) {
    if (separator->empty()) throw RenderError("empty separator");
    if (!from_right) {
      size_t start = 0;
      for (size_t at = text.find(*separator);
           at != std::string_view::npos && (max_split < 0 || static_cast<int64_t>(parts.size()) < max_split);
           at = text.find(*separator, start)) {
        parts.emplace_back(text.substr(start, at - start));
        start = at + separator->size();
      }
      parts.emplace_back(text.substr(start));
      return parts;
    }
    size_t end = text.size();
    while (max_split < 0 || static_cast<int64_t>(parts.size()) < max_split) {
      if (end < separator->size()) break;
      const size_t at = text.rfind(*separator, end - separator->size());
      if (at == std::string_view::npos) break;
      parts.emplace_back(text.substr(at + separator->size(), end - at - separator->size()));
      end = at;
    }
    parts.emplace_back(text.substr(0, end));
    std::reverse(parts.begin(), parts.end());
    return parts;
  }
  // Whitespace runs separate; leading and trailing whitespace yields no empty parts. With a limit,
  // the rest after the last split keeps its inner whitespace (trimmed on the split side only).
  const std::u32string points = code_points(text);
  const auto space = [&](size_t at) { return unicode::is_python_space(points[at]); };
  if (!from_right) {
    size_t at = 0;
    while (true) {
      while (at < points.size() && space(at)) ++at;
      if (at == points.size()) break;
      if (max_split >= 0 && static_cast<int64_t>(parts.size()) == max_split) {
        size_t end = points.size();
        while (end > at && space(end - 1)) --end;
        parts.push_back(utf8(std::u32string_view(points).substr(at, end - at)));
        break;
      }
      const size_t start = at;
      while (at < points.size() && !space(at)) ++at;
      parts.push_back(utf8(std::u32string_view(points).substr(start, at - start)));
    }
    return parts;
  }
  size_t at = points.size();
  while (true) {
    while (at > 0 && space(at - 1)) --at;
    if (at == 0) break;
    if (max_split >= 0 && static_cast<int64_t>(parts.size()) == max_split) {
      size_t begin = 0;
      while (begin < at && space(begin)) ++begin;
      parts.push_back(utf8(std::u32string_view(points).substr(begin, at - begin)));
      break;
    }
    const size_t end = at;
    while (at > 0 && !space(at - 1)) --at;
    parts.push_back(utf8(std::u32string_view(points).substr(at, end - at)));
  }
  std::reverse(parts.begin(), parts.end());
  return parts;
}

std::vector<std::string> splitlines(std::string_view text, bool keep_ends) {
  const std::u32string points = code_points(text);
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t at = 0; at < points.size(); ++at) {
    const char32_t c = points[at];
    const bool brk = c == '\n' || c == '\r' || c == 0x0b || c == 0x0c || c == 0x1c || c == 0x1d || c == 0x1e ||
                     c == 0x85 || c == 0x2028 || c == 0x2029;
    if (!brk) continue;
    size_t end = at + 1;
    if (c == '\r' && end < points.size() && points[end] == '\n') ++end;
    lines.push_back(utf8(std::u32string_view(points).substr(start, (keep_ends ? end : at) - start)));
    start = end;
    at = end - 1;
  }
  if (start < points.size()) lines.push_back(utf8(std::u32string_view(points).substr(start)));
  return lines;
}

std::string replace(std::string_view text, std::string_view old_text, std::string_view new_text, int64_t count) {
  std::string out;
  if (old_text.empty()) {
    // Python inserts the replacement before every character and at the end.
    const std::u32string points = code_points(text);
    int64_t done = 0;
    for (const char32_t c : points) {
      if (count < 0 || done < count) {
        out += new_text;
        ++done;
      }
      out += encode_utf8(c).view();
    }
    if (count < 0 || done < count) out += new_text;
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  for (size_t at = text.find(old_text); at != std::string_view::npos && (count < 0 || done < count);
       at = text.find(old_text, start)) {
    out.append(text.substr(start, at - start));
    out.append(new_text);
    start = at + old_text.size();
    ++done;
  }
  out.append(text.substr(start));
  return out;
}

int64_t count(std::string_view text, std::string_view needle) {
  if (needle.empty()) return static_cast<int64_t>(length(text)) + 1;
  int64_t found = 0;
  for (size_t at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + needle.size())) ++found;
  return found;
}

int64_t find(std::string_view text, std::string_view needle, bool last) {
  const size_t at = last ? text.rfind(needle) : text.find(needle);
  if (at == std::string_view::npos) return -1;
  return static_cast<int64_t>(length(text.substr(0, at)));
}

namespace {

int32_t to_upper(char32_t c) { return utf8proc_toupper(static_cast<utf8proc_int32_t>(c)); }
int32_t to_lower(char32_t c) { return utf8proc_tolower(static_cast<utf8proc_int32_t>(c)); }

bool all_of(std::string_view text, bool (*predicate)(char32_t)) {
  if (text.empty()) return false;
  for (const char32_t c : code_points(text)) {
    if (!predicate(c)) return false;
  }
  return true;
}

bool letter(char32_t c) {
  const utf8proc_category_t category = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return category == UTF8PROC_CATEGORY_LU || category == UTF8PROC_CATEGORY_LL || category == UTF8PROC_CATEGORY_LT ||
         category == UTF8PROC_CATEGORY_LM || category == UTF8PROC_CATEGORY_LO;
}
bool digit(char32_t c) { return unicode::is_python_decimal(c); }

}  // namespace

std::string upper(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char32_t c : code_points(text)) {
    // str.upper() uses the full case mapping, under which ß is SS.
    out += c == 0xdf ? std::string("SS") : std::string(encode_utf8(static_cast<char32_t>(to_upper(c))).view());
  }
  return out;
}

std::string lower(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char32_t c : code_points(text)) out += encode_utf8(static_cast<char32_t>(to_lower(c))).view();
  return out;
}

std::string capitalize(std::string_view text) {
  const std::u32string points = code_points(text);
  if (points.empty()) return {};
  return upper(utf8(std::u32string_view(points).substr(0, 1))) + lower(utf8(std::u32string_view(points).substr(1)));
}

std::string title(std::string_view text) {
  // Jinja splits on runs of [-\s({\[<] and capitalises each piece.
  const std::u32string points = code_points(text);
  std::string out;
  bool word_start = true;
  for (const char32_t c : points) {
    const bool boundary = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || unicode::is_python_space(c);
    const std::string piece = utf8(std::u32string(1, c));
    out += boundary ? piece : word_start ? upper(piece) : lower(piece);
    word_start = boundary;
  }
  return out;
}

bool is_space(std::string_view text) {
  return all_of(text, [](char32_t c) { return unicode::is_python_space(c); });
}
bool is_alpha(std::string_view text) { return all_of(text, letter); }
bool is_digit(std::string_view text) { return all_of(text, digit); }
bool is_alnum(std::string_view text) {
  return all_of(text, [](char32_t c) { return letter(c) || digit(c); });
}

namespace {
bool cased_only(std::string_view text, bool want_upper) {
  bool any = false;
  for (const char32_t c : code_points(text)) {
    const bool is_upper = to_lower(c) != static_cast<int32_t>(c);
    const bool is_lower = to_upper(c) != static_cast<int32_t>(c);
    if (want_upper ? is_lower : is_upper) return false;
    any = any || (want_upper ? is_upper : is_lower);
  }
  return any;
}
}  // namespace

bool is_upper(std::string_view text) { return cased_only(text, true); }
bool is_lower(std::string_view text) { return cased_only(text, false); }

}  // namespace s1::text::jinja::py
