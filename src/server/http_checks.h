#pragma once
// Transport-level checks of the contract (§1, §2.1), free of any socket so they are unit-tested alone.

#include <boost/system/error_code.hpp>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "api/errors.h"

namespace s1::server {

// `model` is GET /v1/models/{id} (contract §11.1).
enum class Route { systemone, decisions, models, model, health, metrics, batch, livez, readyz, unknown };

struct RouteMatch {
  Route route = Route::unknown;
  std::string_view allow;  // the methods the route accepts, for 405
};

// `text` equals `lower_case` ignoring the case of ASCII letters (`lower_case` is in lower case).
bool equals_ignoring_case(std::string_view text, std::string_view lower_case);
// Without leading and trailing spaces and tabs (HTTP's optional whitespace).
std::string_view trim(std::string_view text);

// Exact, case-sensitive path match without the query string.
RouteMatch match_route(std::string_view path);
bool method_allowed(Route route, std::string_view method);
std::string_view route_label(Route route);
// The path of a request target, without its query string.
std::string_view target_path(std::string_view target);
// The id in a /v1/models/{id} path, percent-decoded; nullopt when its escapes are malformed.
std::optional<std::string> model_id_of(std::string_view path);

// `Authorization: Bearer <key>`: scheme case-insensitive, key compared in constant time.
bool authorized(std::string_view authorization_header, std::span<const std::string> keys);

// application/json with at most a charset=utf-8 parameter (any case, quoted or not).
bool acceptable_content_type(std::string_view content_type);
enum class ContentCoding { identity, gzip, deflate, zstd };
// The coding a Content-Encoding value names (absent or empty: identity); nullopt for a list of
// codings or a coding not served (415, §11.1).
std::optional<ContentCoding> content_coding(std::string_view content_encoding);

// A raw 0x00 anywhere in a JSON body is refused before parsing (§11.1): several JSON libraries stop
// at NUL, so a worker behind the router could read a different document than the one checked here.
bool has_nul_byte(std::string_view body);

// The client's x-request-id when it matches [A-Za-z0-9._:+/=-]{1,128}.
bool valid_request_id(std::string_view id);
// The trace id (32 lower-case hex digits) of a valid W3C `traceparent` (Trace Context level 1:
// version 00 exactly, a later version at least as long, neither id all zeros), else nullopt.
std::optional<std::string_view> traceparent_trace_id(std::string_view traceparent);

// 32 random hex digits written over `id` (its storage reused: one per connection).
void assign_fresh_request_id(std::string& id);

// Framing (§11.6). A request target over this is 414.
inline constexpr size_t max_target_bytes = 8 * 1024;

// What a parsed request head says about its own framing.
struct HeadFraming {
  unsigned version = 11;
  size_t target_bytes = 0;
  size_t host_fields = 0;
  size_t content_length_fields = 0;
  size_t transfer_encoding_fields = 0;
  std::string_view transfer_encoding;  // the value when there is one field
};

// The refusal of a head Beast's parser accepted but the contract does not: 414, Content-Length with
// Transfer-Encoding (400), a Transfer-Encoding other than exactly `chunked` (501), HTTP/1.1 without
// exactly one Host (400).
std::optional<api::ApiError> framing_error(const HeadFraming& head);

// The answer to a head Beast's parser refused: `target` is what it parsed of the request line (empty
// when the line itself was not whole), `unparsed` the bytes it left. Nullopt for the errors that mean
// the client is gone (nothing to answer).
std::optional<api::ApiError> head_parse_error(const boost::system::error_code& error, std::string_view target,
                                              bool content_length_seen, std::string_view unparsed);

// The answer to a body Beast's parser refused (a bad chunk): nullopt when the client is gone.
std::optional<api::ApiError> body_parse_error(const boost::system::error_code& error);

}  // namespace s1::server
