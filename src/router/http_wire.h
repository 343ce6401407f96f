#pragma once
// HTTP/1.1 message heads written into one prepared buffer, so that a forwarded request or a reply
// goes out as a single gather write (head, body) instead of through Beast's serializer, whose
// buffer-sequence iteration cost more per request than the forwarding itself (measured:
// docs/benchmarks/router.md). The bytes are those Beast's serializer writes for the same message.

#include "api/errors.h"

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace s1::router {

struct RequestHead {
  std::string_view target;  // path and query
  std::string_view host;    // host:port
  std::span<const api::Header> headers;  // end-to-end fields, kept in order
  std::string_view request_id;
  std::string_view credential;  // sent as Bearer when not empty
  size_t content_length = 0;
};

// "POST target HTTP/1.1", the headers, then Host, x-request-id, Authorization and Content-Length,
// each replacing a header of its name.
void append_request_head(std::string& out, const RequestHead& head);

struct ResponseHead {
  int status = 200;
  unsigned version = 11;  // 10 or 11, as the request said
  std::string_view content_type;  // no Content-Type field when empty
  std::string_view request_id;
  // Each replaces earlier fields of its name (Beast's fields::set). Framing fields (Connection,
  // Content-Length, Transfer-Encoding) are the writer's: callers strip them.
  std::span<const api::Header> headers;
  bool keep_alive = true;
  size_t content_length = 0;
};

// False for 1xx, 204 and 304: such a reply has neither a body nor a Content-Length.
bool response_has_body(int status);

// Beast's reason phrase, or ours for a status Beast does not know (529 "Overloaded").
std::string_view reason_phrase(int status);

// Status line (reason_phrase), Content-Type, x-request-id, the headers, Connection when
// the version's default does not hold, Content-Length, and the blank line.
void append_response_head(std::string& out, const ResponseHead& head);

}  // namespace s1::router
