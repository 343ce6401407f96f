#pragma once
// Transport-level checks of the contract (§1, §2.1), free of any socket so they are unit-tested alone.

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace s1::server {

enum class Route { systemone, decisions, models, health, metrics, batch, unknown };

struct RouteMatch {
  Route route = Route::unknown;
  std::string_view allow;  // the methods the route accepts, for 405
};

// Exact, case-sensitive path match without the query string.
RouteMatch match_route(std::string_view path);
bool method_allowed(Route route, std::string_view method);
std::string_view route_label(Route route);
// The path of a request target, without its query string.
std::string_view target_path(std::string_view target);

// `Authorization: Bearer <key>`: scheme case-insensitive, key compared in constant time.
bool authorized(std::string_view authorization_header, std::span<const std::string> keys);

// application/json with at most a charset=utf-8 parameter (any case, quoted or not).
bool acceptable_content_type(std::string_view content_type);
// Absent or identity.
bool acceptable_content_encoding(std::string_view content_encoding);

// The client's x-request-id when it matches [A-Za-z0-9._:+/=-]{1,128}.
bool valid_request_id(std::string_view id);
// 32 random hex digits written over `id` (its storage reused: one per connection).
void assign_fresh_request_id(std::string& id);

}  // namespace s1::server
