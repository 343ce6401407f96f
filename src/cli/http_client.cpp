#include "cli/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace s1::cli {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::string Url::to_string() const {
  const bool ipv6 = host.find(':') != std::string::npos;
  return "http://" + (ipv6 ? "[" + host + "]" : host) + ":" + port + base_path;
}

Url parse_url(std::string_view text) {
  constexpr std::string_view scheme = "http://";
  if (text.size() < scheme.size() || !iequals(text.substr(0, scheme.size()), scheme)) {
    throw std::invalid_argument("URL must start with http:// (got '" + std::string(text) + "')");
  }
  std::string_view rest = text.substr(scheme.size());
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash);
  if (path.find_first_of("?#") != std::string_view::npos) {
    throw std::invalid_argument("URL must not carry a query or fragment: '" + std::string(text) + "'");
  }
  if (authority.find('@') != std::string_view::npos) {
    throw std::invalid_argument("URL must not carry credentials (use --token-env)");
  }
  Url url;
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) throw std::invalid_argument("URL has an unclosed IPv6 bracket");
    url.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') throw std::invalid_argument("URL has junk after the IPv6 address");
      port = after.substr(1);
    }
  } else {
    const size_t colon = authority.rfind(':');
    url.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (url.host.empty()) throw std::invalid_argument("URL has no host: '" + std::string(text) + "'");
  if (port.empty()) {
    url.port = "80";
  } else {
    unsigned value = 0;
    auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (error != std::errc{} || end != port.data() + port.size() || value == 0 || value > 65535) {
      throw std::invalid_argument("URL has an invalid port '" + std::string(port) + "'");
    }
    url.port = std::to_string(value);
  }
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  url.base_path = std::string(path);
  return url;
}

std::optional<std::string> HttpResponse::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (iequals(key, name)) return value;
  }
  return std::nullopt;
}

std::string_view http_error_kind_name(HttpError::Kind kind) {
  switch (kind) {
    case HttpError::Kind::connect: return "connect";
    case HttpError::Kind::timeout: return "timeout";
    case HttpError::Kind::io: return "io";
    case HttpError::Kind::protocol: return "protocol";
  }
  return "io";
}

struct HttpClient::State {
  asio::io_context io;
  std::optional<tcp::resolver::results_type> endpoints;
  std::optional<beast::tcp_stream> stream;
  beast::flat_buffer buffer;
  bool reused = false;  // the open connection has already carried a complete exchange

  // Runs the queued asynchronous operations to completion; each has its own expiry set on the
  // stream, so this cannot block past the deadline.
  void run() {
    io.restart();
    io.run();
  }
};

HttpClient::HttpClient(Url base, HttpClientOptions options)
    : base_(std::move(base)), options_(options), state_(std::make_unique<State>()) {}

HttpClient::~HttpClient() = default;

void HttpClient::close() {
  if (state_->stream) {
    beast::error_code ignored;
    state_->stream->socket().shutdown(tcp::socket::shutdown_both, ignored);
    state_->stream->close();
    state_->stream.reset();
  }
  state_->buffer.clear();
  state_->reused = false;
}

namespace {

enum class Phase { write, read };

struct Failure {
  Phase phase = Phase::write;
  beast::error_code error;
  bool got_response_bytes = false;
};

HttpError to_http_error(const Failure& failure) {
  const std::string what = std::string(failure.phase == Phase::write ? "writing the request: " : "reading the response: ") +
                           failure.error.message();
  if (failure.error == beast::error::timeout) return HttpError(HttpError::Kind::timeout, "timed out " + what);
  if (failure.error.category() == beast::error_code(http::error::end_of_stream).category() &&
      failure.error != http::error::end_of_stream &&
      failure.error != http::error::partial_message) {
    return HttpError(HttpError::Kind::protocol, "bad response: " + failure.error.message());
  }
  return HttpError(HttpError::Kind::io, what);
}

// A reused keep-alive connection the server closed while idle fails before any byte of the
// response arrives; only that case is safe to send again.
bool stale_connection(const Failure& failure) {
  if (failure.got_response_bytes) return false;
  const auto& e = failure.error;
  return e == http::error::end_of_stream || e == asio::error::eof || e == asio::error::connection_reset ||
         e == asio::error::broken_pipe || e == asio::error::connection_aborted;
}

}  // namespace

HttpResponse HttpClient::request(std::string_view method, std::string_view path, std::string_view body,
                                 const HeaderList& headers) {
  const http::verb verb = http::string_to_verb(method);
  if (verb == http::verb::unknown) throw std::invalid_argument("unknown HTTP method '" + std::string(method) + "'");

  http::request<http::string_body> request{verb, base_.base_path + std::string(path), 11};
  const bool ipv6 = base_.host.find(':') != std::string::npos;
  request.set(http::field::host, (ipv6 ? "[" + base_.host + "]" : base_.host) + ":" + base_.port);
  request.set(http::field::user_agent, std::string("s1serve-tools/") + S1SERVE_VERSION);
  bool has_content_type = false;
  for (const auto& [name, value] : headers) {
    if (iequals(name, "content-type")) has_content_type = true;
    request.insert(name, value);
  }
  if (!body.empty() && !has_content_type) request.set(http::field::content_type, "application/json");
  request.body() = std::string(body);
  request.keep_alive(true);
  request.prepare_payload();

  State& state = *state_;
  for (int attempt = 0;; ++attempt) {
    if (!state.stream) {
      if (!state.endpoints) {
        beast::error_code error;
        tcp::resolver resolver(state.io);
        auto results = resolver.resolve(base_.host, base_.port, error);
        if (error) throw HttpError(HttpError::Kind::connect, "cannot resolve " + base_.host + ": " + error.message());
        state.endpoints = std::move(results);
      }
      state.stream.emplace(state.io);
      state.stream->expires_after(options_.connect_timeout);
      beast::error_code connect_error;
      state.stream->async_connect(*state.endpoints,
                                  [&](const beast::error_code& error, const tcp::endpoint&) { connect_error = error; });
      state.run();
      if (connect_error) {
        state.stream.reset();
        if (connect_error == beast::error::timeout) {
          throw HttpError(HttpError::Kind::timeout, "timed out connecting to " + base_.to_string());
        }
        throw HttpError(HttpError::Kind::connect, "cannot connect to " + base_.to_string() + ": " + connect_error.message());
      }
      state.stream->socket().set_option(tcp::no_delay(true));
      state.buffer.clear();
      state.reused = false;
    }

    http::response_parser<http::string_body> parser;
    parser.body_limit(options_.max_body_bytes);
    parser.header_limit(1u << 20);
    std::optional<Failure> failure;
    state.stream->expires_after(options_.read_timeout);
    http::async_write(*state.stream, request, [&](const beast::error_code& error, size_t) {
      if (error) {
        failure = Failure{Phase::write, error, false};
        return;
      }
      http::async_read(*state.stream, state.buffer, parser, [&](const beast::error_code& read_error, size_t) {
        if (read_error) failure = Failure{Phase::read, read_error, parser.got_some()};
      });
    });
    state.run();

    if (failure) {
      const bool retry = state.reused && attempt == 0 && stale_connection(*failure);
      close();
      if (retry) continue;
      throw to_http_error(*failure);
    }

    auto message = parser.release();
    HttpResponse response;
    response.status = static_cast<int>(message.result_int());
    for (const auto& field : message) {
      response.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
    response.body = std::move(message.body());
    if (message.keep_alive()) {
      state.stream->expires_never();
      state.reused = true;
    } else {
      close();
    }
    return response;
  }
}

}  // namespace s1::cli
