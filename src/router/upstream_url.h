#pragma once
// Upstream worker URLs (contract §11.7): http://host[:port][/path] only, and shown without secrets.

#include <string>
#include <string_view>

namespace s1::router {

struct ParsedUrl {
  std::string host;
  std::string port;
  std::string base_path;  // without a trailing slash
};

// Throws std::invalid_argument naming the URL (as shown_url shows it) when it is not
// http://host[:port][/path]: user-info or a query string included, since credentials go in the
// pool's credential setting, where nothing prints them.
ParsedUrl parse_upstream_url(const std::string& url);

// The URL as an error message may show it: user-info, query and fragment replaced by "***".
std::string shown_url(std::string_view url);

}  // namespace s1::router
