#include "server/http_checks.h"

#include <algorithm>
#include <cctype>
#include <random>

namespace s1::server {
namespace {

// Compared in place, without a lower-cased copy: asked for headers of every request.
bool equals_ignoring_case(std::string_view text, std::string_view lower_case) {
  return text.size() == lower_case.size() &&
         std::equal(text.begin(), text.end(), lower_case.begin(),
                    [](unsigned char a, unsigned char b) { return std::tolower(a) == b; });
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Compare over the longer length so the time does not reveal the matching prefix.
  const size_t length = std::max(a.size(), b.size());
  unsigned char difference = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < length; ++i) {
    const auto x = static_cast<unsigned char>(i < a.size() ? a[i] : 0);
    const auto y = static_cast<unsigned char>(i < b.size() ? b[i] : 0);
    difference |= static_cast<unsigned char>(x ^ y);
  }
  return difference == 0;
}

}  // namespace

std::string_view target_path(std::string_view target) { return target.substr(0, target.find('?')); }

RouteMatch match_route(std::string_view path) {
  if (path == "/v1/systemone") return {Route::systemone, "POST"};
  if (path == "/v1/decisions") return {Route::decisions, "POST"};
  if (path == "/v1/systemone/batch") return {Route::batch, "POST"};
  if (path == "/v1/models") return {Route::models, "GET, HEAD"};
  if (path == "/health") return {Route::health, "GET, HEAD"};
  if (path == "/metrics") return {Route::metrics, "GET, HEAD"};
  return {Route::unknown, ""};
}

bool method_allowed(Route route, std::string_view method) {
  switch (route) {
    case Route::systemone:
    case Route::decisions:
    case Route::batch: return method == "POST";
    case Route::models:
    case Route::health:
    case Route::metrics: return method == "GET" || method == "HEAD";
    case Route::unknown: return false;
  }
  return false;
}

std::string_view route_label(Route route) {
  switch (route) {
    case Route::systemone: return "/v1/systemone";
    case Route::decisions: return "/v1/decisions";
    case Route::models: return "/v1/models";
    case Route::health: return "/health";
    case Route::metrics: return "/metrics";
    case Route::batch: return "/v1/systemone/batch";
    case Route::unknown: return "other";
  }
  return "other";
}

bool authorized(std::string_view header, std::span<const std::string> keys) {
  header = trim(header);
  const size_t space = header.find(' ');
  if (space == std::string_view::npos || !equals_ignoring_case(header.substr(0, space), "bearer")) return false;
  const std::string_view presented = trim(header.substr(space + 1));
  bool match = false;
  for (const std::string& key : keys) match |= constant_time_equal(presented, key);
  return match && !presented.empty();
}

bool acceptable_content_type(std::string_view content_type) {
  std::string_view rest = content_type;
  const size_t semicolon = rest.find(';');
  if (!equals_ignoring_case(trim(rest.substr(0, semicolon)), "application/json")) return false;
  if (semicolon == std::string_view::npos) return true;
  rest.remove_prefix(semicolon + 1);
  while (true) {
    const size_t next = rest.find(';');
    const std::string_view parameter = trim(rest.substr(0, next));
    const size_t equals = parameter.find('=');
    if (equals == std::string_view::npos) return false;
    if (!equals_ignoring_case(trim(parameter.substr(0, equals)), "charset")) return false;
    std::string_view value = trim(parameter.substr(equals + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
    if (!equals_ignoring_case(value, "utf-8")) return false;
    if (next == std::string_view::npos) return true;
    rest.remove_prefix(next + 1);
  }
}

bool acceptable_content_encoding(std::string_view content_encoding) {
  const std::string_view value = trim(content_encoding);
  return value.empty() || equals_ignoring_case(value, "identity");
}

bool valid_request_id(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  return std::all_of(id.begin(), id.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '_' || c == ':' || c == '+' || c == '/' || c == '=' || c == '-';
  });
}

void assign_fresh_request_id(std::string& id) {
  thread_local std::mt19937_64 generator{std::random_device{}()};
  static constexpr char digits[] = "0123456789abcdef";
  id.assign(32, '0');
  uint64_t bits = 0;
  for (size_t i = 0; i < id.size(); ++i) {
    if (i % 16 == 0) bits = generator();
    id[i] = digits[bits & 0xF];
    bits >>= 4;
  }
}

}  // namespace s1::server
