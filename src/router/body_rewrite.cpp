#include "router/body_rewrite.h"

#include "api/json.h"

namespace s1::router {
namespace {

size_t skip_whitespace(std::string_view text, size_t at) {
  while (at < text.size() && (text[at] == ' ' || text[at] == '\t' || text[at] == '\n' || text[at] == '\r')) ++at;
  return at;
}

// `at` is on the opening quote; returns the offset just past the closing quote.
size_t skip_string(std::string_view text, size_t at) {
  for (++at; at < text.size(); ++at) {
    if (text[at] == '\\') {
      ++at;
    } else if (text[at] == '"') {
      return at + 1;
    }
  }
  return text.size();
}

// Offset just past the JSON value starting at `at`.
size_t skip_value(std::string_view text, size_t at) {
  if (at >= text.size()) return at;
  if (text[at] == '"') return skip_string(text, at);
  if (text[at] == '{' || text[at] == '[') {
    int depth = 0;
    while (at < text.size()) {
      const char c = text[at];
      if (c == '"') {
        at = skip_string(text, at);
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') {
        if (--depth == 0) return at + 1;
      }
      ++at;
    }
    return at;
  }
  while (at < text.size() && text[at] != ',' && text[at] != '}' && text[at] != ']' && text[at] != ' ' &&
         text[at] != '\t' && text[at] != '\n' && text[at] != '\r') {
    ++at;
  }
  return at;
}

std::string unescaped_key(std::string_view quoted) {
  if (quoted.find('\\') == std::string_view::npos) return std::string(quoted.substr(1, quoted.size() - 2));
  const auto parsed = api::parse_strict_json(quoted);
  if (const auto* value = std::get_if<api::Json>(&parsed); value != nullptr && value->is_string()) {
    return value->get<std::string>();
  }
  return {};
}

}  // namespace

std::optional<MemberSpan> find_top_level_member(std::string_view body, std::string_view name) {
  size_t at = skip_whitespace(body, 0);
  if (at >= body.size() || body[at] != '{') return std::nullopt;
  at = skip_whitespace(body, at + 1);
  while (at < body.size() && body[at] == '"') {
    const size_t key_end = skip_string(body, at);
    const std::string key = unescaped_key(body.substr(at, key_end - at));
    at = skip_whitespace(body, key_end);
    if (at >= body.size() || body[at] != ':') return std::nullopt;
    at = skip_whitespace(body, at + 1);
    const size_t value_end = skip_value(body, at);
    if (key == name) return MemberSpan{at, value_end};
    at = skip_whitespace(body, value_end);
    if (at < body.size() && body[at] == ',') at = skip_whitespace(body, at + 1);
  }
  return std::nullopt;
}

std::string with_model(std::string_view body, std::string_view model) {
  std::string quoted;
  api::append_json_string(quoted, model);
  if (const auto member = find_top_level_member(body, "model")) {
    return std::string(body.substr(0, member->value_begin)) + quoted + std::string(body.substr(member->value_end));
  }
  const size_t open = skip_whitespace(body, 0);
  const size_t first = skip_whitespace(body, open + 1);
  const bool empty_object = first < body.size() && body[first] == '}';
  return std::string(body.substr(0, open + 1)) + "\"model\":" + quoted + (empty_object ? "" : ",") +
         std::string(body.substr(open + 1));
}

}  // namespace s1::router
