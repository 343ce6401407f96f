#include "router/http_wire.h"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/status.hpp>

#include <charconv>

namespace s1::router {
namespace {

void append_number(std::string& out, size_t value) {
  char digits[24];
  const auto written = std::to_chars(digits, digits + sizeof digits, value);
  out.append(digits, written.ptr);
}

void append_field(std::string& out, std::string_view name, std::string_view value) {
  out.append(name);
  out.append(": ");
  out.append(value);
  out.append("\r\n");
}

bool same_name(std::string_view a, std::string_view b) { return boost::beast::iequals(a, b); }

}  // namespace

void append_request_head(std::string& out, const RequestHead& head) {
  out.append("POST ");
  out.append(head.target);
  out.append(" HTTP/1.1\r\n");
  for (const auto& [name, value] : head.headers) {
    const bool replaced = same_name(name, "Host") || same_name(name, "x-request-id") ||
                          same_name(name, "Content-Length") ||
                          (!head.credential.empty() && same_name(name, "Authorization"));
    if (!replaced) append_field(out, name, value);
  }
  append_field(out, "Host", head.host);
  append_field(out, "x-request-id", head.request_id);
  if (!head.credential.empty()) {
    out.append("Authorization: Bearer ");
    out.append(head.credential);
    out.append("\r\n");
  }
  out.append("Content-Length: ");
  append_number(out, head.content_length);
  out.append("\r\n\r\n");
}

bool response_has_body(int status) { return status >= 200 && status != 204 && status != 304; }

std::string_view reason_phrase(int status) {
  // 529 is not registered, so Beast names it "<unknown-status>"; TypeSafe's API (and the clients that
  // key their retries on it) calls it overloaded.
  if (status == 529) return "Overloaded";
  const auto reason = boost::beast::http::obsolete_reason(static_cast<boost::beast::http::status>(status));
  return {reason.data(), reason.size()};
}

void append_response_head(std::string& out, const ResponseHead& head) {
  out.append(head.version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ");
  append_number(out, static_cast<size_t>(head.status));
  out.push_back(' ');
  out.append(reason_phrase(head.status));
  out.append("\r\n");
  // A field is written where its last setting is: a later header of the same name replaces it.
  auto replaced_after = [&head](std::string_view name, size_t index) {
    for (size_t later = index; later < head.headers.size(); ++later) {
      if (same_name(head.headers[later].first, name)) return true;
    }
    return false;
  };
  if (!head.content_type.empty() && !replaced_after("Content-Type", 0)) {
    append_field(out, "Content-Type", head.content_type);
  }
  if (!replaced_after("x-request-id", 0)) append_field(out, "x-request-id", head.request_id);
  for (size_t i = 0; i < head.headers.size(); ++i) {
    if (!replaced_after(head.headers[i].first, i + 1)) append_field(out, head.headers[i].first, head.headers[i].second);
  }
  if (head.version >= 11 && !head.keep_alive) append_field(out, "Connection", "close");
  if (head.version < 11 && head.keep_alive) append_field(out, "Connection", "keep-alive");
  if (response_has_body(head.status)) {
    out.append("Content-Length: ");
    append_number(out, head.content_length);
    out.append("\r\n");
  }
  out.append("\r\n");
}

}  // namespace s1::router
