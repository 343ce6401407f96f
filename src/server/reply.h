#pragma once
// A reply as the session writes it, and the contract's error envelope for a route.

#include "api/errors.h"
#include "router/header_list.h"
#include "server/http_checks.h"

#include <string>
#include <string_view>

namespace s1::server {

struct Reply {
  int status = 200;
  router::HeaderList headers;
  std::string body;
  // A literal, or the worker's value held by the connection's UpstreamReply until the next request.
  std::string_view content_type = "application/json";
  bool close = false;    // the connection cannot be reused (unread body, broken upload): linger, then close
  bool send = true;      // false: the client is gone, nothing to write
  std::string rejected;  // metrics reason, when rejected before inference
};

Reply error_reply(const api::ApiError& error, Route route);

}  // namespace s1::server
