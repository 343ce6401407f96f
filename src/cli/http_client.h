#pragma once

// A small synchronous HTTP/1.1 client for the command-line tools (bench, compare).
//
// One HttpClient owns one keep-alive connection and is used by one thread. Calls block; connect
// and read deadlines are enforced by driving Beast's asynchronous operations on a private
// io_context, because Beast's blocking calls have no timeouts. Chunked and Content-Length
// responses are both decoded by Beast's parser; the caller gets the status, the headers as sent
// (name case kept, order kept) and the body bytes.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace s1::cli {

// http://host:port[/base]; the base path has no trailing slash ("" for none).
struct Url {
  std::string host;
  std::string port;
  std::string base_path;

  std::string to_string() const;
};

// Throws std::invalid_argument naming the problem (only http:// is supported).
Url parse_url(std::string_view text);

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct HttpResponse {
  int status = 0;
  HeaderList headers;
  std::string body;

  // First header with this name (case-insensitive), if any.
  std::optional<std::string> header(std::string_view name) const;
};

struct HttpClientOptions {
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds read_timeout{120000};  // whole exchange: write + read of one response
  std::uint64_t max_body_bytes = 64ull << 20;
};

// A failed exchange: no complete response was received.
class HttpError : public std::runtime_error {
 public:
  enum class Kind { connect, timeout, io, protocol };
  HttpError(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

std::string_view http_error_kind_name(HttpError::Kind kind);

class HttpClient {
 public:
  explicit HttpClient(Url base, HttpClientOptions options = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends METHOD base_path+path. A Content-Type of application/json is added for a non-empty body
  // unless `headers` names one. A request on a reused keep-alive connection that the server had
  // already closed (no response byte received) is retried once on a fresh connection.
  // Throws HttpError.
  HttpResponse request(std::string_view method, std::string_view path, std::string_view body = {},
                       const HeaderList& headers = {});

  // Drops the connection; the next request connects again.
  void close();

  const Url& base() const { return base_; }

 private:
  struct State;
  Url base_;
  HttpClientOptions options_;
  std::unique_ptr<State> state_;
};

}  // namespace s1::cli
