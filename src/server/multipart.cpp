#include "server/multipart.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "server/http_checks.h"

namespace s1::server {
namespace {

constexpr size_t max_part_header_bytes = 8 * 1024;

api::ApiError malformed(std::string message) {
  return api::ApiError::make(api::ErrorCode::invalid_multipart, "Malformed multipart body: " + std::move(message));
}

bool boundary_character(char c) {
  // RFC 2046's bchars; a space may not end the boundary.
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("'()+_,-./:=? ").find(c) != std::string_view::npos;
}

// A parameter value: a token, or a quoted string whose backslashes quote the next character. The
// unquoted value is a view when it has no backslash; FormPart keeps views, so an escaped value is
// refused (the SDK writes names unescaped, browsers percent-encode quotes).
std::optional<std::string_view> parameter_value(std::string_view value) {
  value = trim(value);
  if (value.empty() || value.front() != '"') return value;
  if (value.size() < 2 || value.back() != '"') return std::nullopt;
  value = value.substr(1, value.size() - 2);
  if (value.find('\\') != std::string_view::npos || value.find('"') != std::string_view::npos) return std::nullopt;
  return value;
}

// Splits `header` ("type; a=1; b=\"x\"") at semicolons outside quoted strings, calling
// on_parameter(name, value) for each parameter; false when a parameter is not name=value.
template <class OnParameter>
bool for_each_parameter(std::string_view parameters, OnParameter on_parameter) {
  while (!parameters.empty()) {
    size_t end = 0;
    bool quoted = false;
    for (; end < parameters.size(); ++end) {
      const char c = parameters[end];
      if (quoted && c == '\\') {
        ++end;
      } else if (c == '"') {
        quoted = !quoted;
      } else if (c == ';' && !quoted) {
        break;
      }
    }
    const std::string_view parameter = trim(parameters.substr(0, end));
    parameters.remove_prefix(std::min(end + 1, parameters.size()));
    if (parameter.empty()) continue;
    const size_t equals = parameter.find('=');
    if (equals == std::string_view::npos) return false;
    const std::optional<std::string_view> value = parameter_value(parameter.substr(equals + 1));
    if (!value || !on_parameter(trim(parameter.substr(0, equals)), *value)) return false;
  }
  return true;
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// The part's header lines (each "Name: value", CRLF-separated, no blank line) into `part`.
std::optional<api::ApiError> read_part_headers(std::string_view block, FormPart& part) {
  bool disposition_seen = false;
  while (!block.empty()) {
    const size_t end = block.find("\r\n");
    const std::string_view line = block.substr(0, end);
    block.remove_prefix(end == std::string_view::npos ? block.size() : end + 2);
    const size_t colon = line.find(':');
    if (colon == 0 || colon == std::string_view::npos || line.front() == ' ' || line.front() == '\t') {
      return malformed("a part header line is not 'Name: value'");
    }
    const std::string name = lower(line.substr(0, colon));
    const std::string_view value = trim(line.substr(colon + 1));
    if (name == "content-disposition") {
      if (disposition_seen) return malformed("a part has two Content-Disposition headers");
      disposition_seen = true;
      const size_t semicolon = value.find(';');
      if (!equals_ignoring_case(trim(value.substr(0, semicolon)), "form-data")) {
        return malformed("a part's Content-Disposition is not form-data");
      }
      bool named = false;
      const bool parsed =
          semicolon != std::string_view::npos &&
          for_each_parameter(value.substr(semicolon + 1), [&](std::string_view key, std::string_view text) {
            if (equals_ignoring_case(key, "name")) {
              if (named) return false;
              named = true;
              part.name = text;
            } else if (equals_ignoring_case(key, "filename")) {
              part.filename = text;
            }
            return true;
          });
      if (!parsed || !named || part.name.empty()) return malformed("a part's Content-Disposition has no valid name");
    } else if (name == "content-type") {
      if (!part.content_type.empty()) return malformed("a part has two Content-Type headers");
      part.content_type = value;
      if (part.content_type.empty()) return malformed("a part has an empty Content-Type");
    }
    // Other part headers (Content-Transfer-Encoding is deprecated by RFC 7578) carry nothing served.
  }
  if (!disposition_seen) return malformed("a part has no Content-Disposition");
  return std::nullopt;
}

}  // namespace

std::optional<std::string_view> form_data_boundary(std::string_view content_type) {
  const size_t semicolon = content_type.find(';');
  if (!equals_ignoring_case(trim(content_type.substr(0, semicolon)), "multipart/form-data")) return std::nullopt;
  std::string_view boundary;
  if (semicolon != std::string_view::npos) {
    const bool parsed =
        for_each_parameter(content_type.substr(semicolon + 1), [&](std::string_view key, std::string_view value) {
          if (equals_ignoring_case(key, "boundary")) {
            if (!boundary.empty()) return false;
            boundary = value;
          }
          return true;
        });
    if (!parsed) return std::string_view();
  }
  const bool valid = !boundary.empty() && boundary.size() <= 70 && boundary.back() != ' ' &&
                     std::all_of(boundary.begin(), boundary.end(), boundary_character);
  return valid ? boundary : std::string_view();
}

api::Result<std::vector<FormPart>> parse_form_data(std::string_view body, std::string_view boundary) {
  if (boundary.empty()) return malformed("no valid boundary parameter");
  const std::string delimiter = "--" + std::string(boundary);
  const std::string next_delimiter = "\r\n" + delimiter;
  // The first delimiter opens the body or ends a preamble, which is ignored.
  size_t at = 0;
  if (body.substr(0, delimiter.size()) != delimiter) {
    at = body.find(next_delimiter);
    if (at == std::string_view::npos) return malformed("no opening boundary delimiter");
    at += 2;
  }
  std::vector<FormPart> parts;
  while (true) {
    at += delimiter.size();
    if (body.substr(at, 2) == "--") {
      if (parts.empty()) return malformed("no parts");
      return parts;  // the close delimiter; an epilogue after it is ignored
    }
    while (at < body.size() && (body[at] == ' ' || body[at] == '\t')) ++at;  // transport padding
    if (body.substr(at, 2) != "\r\n") return malformed("a boundary delimiter is not followed by a line end");
    at += 2;
    FormPart part;
    size_t content_start = at;
    if (body.substr(at, 2) == "\r\n") {
      content_start = at + 2;  // no part headers
    } else {
      const size_t blank = body.find("\r\n\r\n", at);
      if (blank == std::string_view::npos) return malformed("a part's headers do not end");
      if (blank - at > max_part_header_bytes) return malformed("a part's headers are longer than 8 KiB");
      if (auto error = read_part_headers(body.substr(at, blank - at), part)) return *error;
      content_start = blank + 4;
    }
    if (part.name.empty()) return malformed("a part has no Content-Disposition");
    const size_t end = body.find(next_delimiter, content_start);
    if (end == std::string_view::npos) return malformed("no closing boundary delimiter");
    part.content = body.substr(content_start, end - content_start);
    parts.push_back(part);
    at = end + 2;
  }
}

api::Result<FormRequest> split_form_request(std::string_view body, std::string_view boundary) {
  auto parts = parse_form_data(body, boundary);
  if (!parts) return parts.error();
  FormRequest request;
  const FormPart* json = nullptr;
  for (const FormPart& part : parts.value()) {
    if (part.name != "request") {
      request.uploads.push_back(
          api::UploadedPart{std::string(part.name), std::string(part.content_type), std::string(part.content)});
    } else if (json != nullptr) {
      return api::ApiError::make(api::ErrorCode::invalid_multipart, "Two parts are named request");
    } else {
      json = &part;
    }
  }
  if (json == nullptr) return api::ApiError::make(api::ErrorCode::invalid_multipart, "No part is named request");
  if (!json->content_type.empty() && !acceptable_content_type(json->content_type)) {
    return api::ApiError::make(api::ErrorCode::unsupported_media_type,
                               "The request part's Content-Type must be application/json");
  }
  request.json = std::string(json->content);
  return request;
}

}  // namespace s1::server
