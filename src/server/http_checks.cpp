#include "server/http_checks.h"

#include <algorithm>
#include <boost/asio/error.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>
#include <cctype>
#include <charconv>
#include <cstring>
#include <random>

namespace s1::server {
namespace {

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

std::string_view target_path(std::string_view target) { return target.substr(0, target.find('?')); }

constexpr std::string_view model_prefix = "/v1/models/";

std::optional<std::string> model_id_of(std::string_view path) {
  if (!path.starts_with(model_prefix)) return std::nullopt;
  const std::string_view escaped = path.substr(model_prefix.size());
  std::string id;
  for (size_t i = 0; i < escaped.size(); ++i) {
    if (escaped[i] != '%') {
      id += escaped[i];
      continue;
    }
    unsigned value = 0;
    const char* first = escaped.data() + i + 1;
    if (i + 2 >= escaped.size() || !std::isxdigit(static_cast<unsigned char>(first[0])) ||
        !std::isxdigit(static_cast<unsigned char>(first[1]))) {
      return std::nullopt;
    }
    std::from_chars(first, first + 2, value, 16);
    id += static_cast<char>(value);
    i += 2;
  }
  return id;
}

RouteMatch match_route(std::string_view path) {
  if (path == "/v1/systemone") return {Route::systemone, "POST"};
  if (path == "/v1/decisions") return {Route::decisions, "POST"};
  if (path == "/v1/systemone/batch") return {Route::batch, "POST"};
  if (path == "/v1/models") return {Route::models, "GET, HEAD"};
  if (path.starts_with(model_prefix) && path.size() > model_prefix.size()) return {Route::model, "GET, HEAD"};
  if (path == "/health") return {Route::health, "GET, HEAD"};
  if (path == "/metrics") return {Route::metrics, "GET, HEAD"};
  if (path == "/livez") return {Route::livez, "GET, HEAD"};
  if (path == "/readyz") return {Route::readyz, "GET, HEAD"};
  return {Route::unknown, ""};
}

bool method_allowed(Route route, std::string_view method) {
  switch (route) {
    case Route::systemone:
    case Route::decisions:
    case Route::batch: return method == "POST";
    case Route::models:
    case Route::model:
    case Route::health:
    case Route::metrics:
    case Route::livez:
    case Route::readyz: return method == "GET" || method == "HEAD";
    case Route::unknown: return false;
  }
  return false;
}

std::string_view route_label(Route route) {
  switch (route) {
    case Route::systemone: return "/v1/systemone";
    case Route::decisions: return "/v1/decisions";
    case Route::models: return "/v1/models";
    case Route::model: return "/v1/models/{id}";
    case Route::health: return "/health";
    case Route::metrics: return "/metrics";
    case Route::batch: return "/v1/systemone/batch";
    case Route::livez: return "/livez";
    case Route::readyz: return "/readyz";
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

std::optional<ContentCoding> content_coding(std::string_view content_encoding) {
  const std::string_view value = trim(content_encoding);
  if (value.empty() || equals_ignoring_case(value, "identity")) return ContentCoding::identity;
  if (equals_ignoring_case(value, "gzip") || equals_ignoring_case(value, "x-gzip")) return ContentCoding::gzip;
  if (equals_ignoring_case(value, "deflate")) return ContentCoding::deflate;
  if (equals_ignoring_case(value, "zstd")) return ContentCoding::zstd;
  return std::nullopt;
}

bool has_nul_byte(std::string_view body) { return std::memchr(body.data(), 0, body.size()) != nullptr; }

bool valid_request_id(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  return std::all_of(id.begin(), id.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '_' || c == ':' || c == '+' || c == '/' || c == '=' || c == '-';
  });
}

std::optional<std::string_view> traceparent_trace_id(std::string_view traceparent) {
  // version "-" trace-id "-" parent-id "-" flags: 2, 32, 16 and 2 lower-case hex digits.
  constexpr size_t length = 55;
  auto hex = [&](size_t from, size_t count) {
    return std::all_of(traceparent.begin() + static_cast<ptrdiff_t>(from),
                       traceparent.begin() + static_cast<ptrdiff_t>(from + count),
                       [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
  };
  auto zeros = [&](size_t from, size_t count) {
    return traceparent.substr(from, count).find_first_not_of('0') == std::string_view::npos;
  };
  if (traceparent.size() < length || !hex(0, 2) || traceparent.substr(0, 2) == "ff") return std::nullopt;
  // A later version may append fields after a dash; version 00 has exactly these.
  if (traceparent.substr(0, 2) == "00" ? traceparent.size() != length
                                       : traceparent.size() > length && traceparent[length] != '-') {
    return std::nullopt;
  }
  if (traceparent[2] != '-' || traceparent[35] != '-' || traceparent[52] != '-') return std::nullopt;
  if (!hex(3, 32) || !hex(36, 16) || !hex(53, 2) || zeros(3, 32) || zeros(36, 16)) return std::nullopt;
  return traceparent.substr(3, 32);
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

namespace {

api::ApiError bad_request(std::string message) {
  return api::ApiError::make(api::ErrorCode::bad_request, std::move(message));
}

// The version of a request line Beast refused for its version: a well-formed HTTP/x.y other than
// 1.0 and 1.1 is 505; anything else is a malformed line (400).
bool well_formed_other_version(std::string_view unparsed) {
  std::string_view line = unparsed.substr(0, unparsed.find('\n'));
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const std::string_view version = line.substr(line.rfind(' ') + 1);
  const bool shaped = version.size() == 8 && version.substr(0, 5) == "HTTP/" &&
                      std::isdigit(static_cast<unsigned char>(version[5])) && version[6] == '.' &&
                      std::isdigit(static_cast<unsigned char>(version[7]));
  return shaped && version != "HTTP/1.0" && version != "HTTP/1.1";
}

bool client_gone(const boost::system::error_code& error) {
  namespace http = boost::beast::http;
  return error == http::error::end_of_stream || error == http::error::partial_message ||
         error == boost::asio::error::eof ||
         error.category() != http::make_error_code(http::error::bad_target).category();
}

}  // namespace

std::optional<api::ApiError> framing_error(const HeadFraming& head) {
  if (head.target_bytes > max_target_bytes) {
    return api::ApiError::make(api::ErrorCode::uri_too_long, "Request target longer than 8 KiB");
  }
  if (head.transfer_encoding_fields > 0 && head.content_length_fields > 0) {
    return bad_request("Content-Length together with Transfer-Encoding");
  }
  if (head.transfer_encoding_fields > 1 ||
      (head.transfer_encoding_fields == 1 && !equals_ignoring_case(trim(head.transfer_encoding), "chunked"))) {
    return api::ApiError::make(api::ErrorCode::not_implemented, "Transfer-Encoding other than chunked");
  }
  if (head.version >= 11 && head.host_fields != 1) return bad_request("HTTP/1.1 request without exactly one Host");
  return std::nullopt;
}

std::optional<api::ApiError> head_parse_error(const boost::system::error_code& error, std::string_view target,
                                              bool content_length_seen, std::string_view unparsed) {
  namespace http = boost::beast::http;
  if (client_gone(error)) return std::nullopt;
  if (error == http::error::header_limit) {
    // No whole request line within the header limit: the target alone is over 8 KiB.
    if (target.empty() || target.size() > max_target_bytes) {
      return api::ApiError::make(api::ErrorCode::uri_too_long, "Request target longer than 8 KiB");
    }
    return api::ApiError::make(api::ErrorCode::header_fields_too_large, "Request header block larger than 64 KiB");
  }
  if (error == http::error::bad_version && well_formed_other_version(unparsed)) {
    return api::ApiError::make(api::ErrorCode::http_version_not_supported, "Only HTTP/1.0 and HTTP/1.1 are served");
  }
  if (error == http::error::bad_transfer_encoding) {
    // Beast refuses a second Transfer-Encoding after `chunked`, and one after Content-Length.
    if (content_length_seen) return bad_request("Content-Length together with Transfer-Encoding");
    return api::ApiError::make(api::ErrorCode::not_implemented, "Transfer-Encoding other than chunked");
  }
  if (error == http::error::bad_content_length) return bad_request("Invalid or conflicting Content-Length");
  return bad_request("Malformed request head: " + error.message());
}

std::optional<api::ApiError> body_parse_error(const boost::system::error_code& error) {
  if (client_gone(error)) return std::nullopt;
  return bad_request("Malformed request body framing: " + error.message());
}

}  // namespace s1::server
