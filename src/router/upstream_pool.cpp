#include "router/upstream_pool.h"

#include "router/buffered_parse.h"

#include <boost/asio.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <mutex>
#include <stdexcept>

#include <sys/socket.h>

namespace s1::router {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// A pooled connection is reused only when a non-blocking peek shows it still open and silent.
bool still_open(tcp::socket& socket) {
  char byte = 0;
  const ssize_t received = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return received < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

api::ApiError unavailable(const std::string& pool) {
  return api::ApiError::make(api::ErrorCode::upstream_unavailable, "No worker of " + pool + " could be reached");
}

api::ApiError bad_response(const std::string& pool) {
  return api::ApiError::make(api::ErrorCode::upstream_bad_response, "A worker of " + pool + " sent a broken reply");
}

api::ApiError deadline_passed() {
  return api::ApiError::make(api::ErrorCode::deadline_exceeded, "The request's deadline passed waiting for a worker");
}

}  // namespace

ParsedUrl parse_upstream_url(const std::string& url) {
  constexpr std::string_view scheme = "http://";
  if (!url.starts_with(scheme)) throw std::invalid_argument("upstream URL '" + url + "' must start with http://");
  std::string_view rest = std::string_view(url).substr(scheme.size());
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  ParsedUrl parsed;
  parsed.base_path = slash == std::string_view::npos ? "" : std::string(rest.substr(slash));
  while (!parsed.base_path.empty() && parsed.base_path.back() == '/') parsed.base_path.pop_back();
  if (authority.empty()) throw std::invalid_argument("upstream URL '" + url + "' has no host");
  if (authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) throw std::invalid_argument("upstream URL '" + url + "' has a bad IPv6 host");
    parsed.host = std::string(authority.substr(1, close - 1));
    authority.remove_prefix(close + 1);
    parsed.port = authority.starts_with(":") ? std::string(authority.substr(1)) : "80";
  } else {
    const size_t colon = authority.rfind(':');
    parsed.host = std::string(authority.substr(0, colon));
    parsed.port = colon == std::string_view::npos ? "80" : std::string(authority.substr(colon + 1));
  }
  if (parsed.host.empty() || parsed.port.empty() ||
      !std::all_of(parsed.port.begin(), parsed.port.end(), [](unsigned char c) { return std::isdigit(c); })) {
    throw std::invalid_argument("upstream URL '" + url + "' must be http://host[:port][/path]");
  }
  return parsed;
}

struct UpstreamPool::Replica {
  std::string url;
  ParsedUrl address;
  std::atomic<bool> healthy{true};  // not yet polled counts as healthy
  std::atomic<int> outstanding{0};
  std::mutex idle_mutex;
  // Pooled connections with the I/O context (thread) that owns them: a request reuses only its own
  // thread's connections, so no completion hops threads.
  std::vector<std::pair<asio::execution_context*, tcp::socket>> idle;
};

UpstreamPool::UpstreamPool(std::string name, UpstreamSettings settings, PoolObserver observer)
    : name_(std::move(name)),
      settings_(std::move(settings)),
      upstream_model_(settings_.upstream_model.value_or(name_)),
      observer_(std::move(observer)) {
  if (settings_.urls.empty()) throw std::invalid_argument("upstream model '" + name_ + "' has no replica URLs");
  for (const std::string& url : settings_.urls) {
    auto replica = std::make_unique<Replica>();
    replica->url = url;
    replica->address = parse_upstream_url(url);
    replicas_.push_back(std::move(replica));
  }
}

UpstreamPool::~UpstreamPool() = default;

size_t UpstreamPool::replica_count() const { return replicas_.size(); }

size_t UpstreamPool::healthy_count() const {
  return static_cast<size_t>(std::count_if(replicas_.begin(), replicas_.end(),
                                           [](const auto& replica) { return replica->healthy.load(); }));
}

bool UpstreamPool::is_hop_by_hop(std::string_view header_name) {
  const std::string name = lower(header_name);
  return name == "connection" || name == "keep-alive" || name.starts_with("proxy-") || name == "te" ||
         name == "trailer" || name == "transfer-encoding" || name == "upgrade";
}

UpstreamPool::Replica* UpstreamPool::choose(const Replica* excluded) {
  // Two passes instead of a list of the tied replicas: nothing allocated per request.
  auto eligible = [excluded](const Replica& replica) { return &replica != excluded && replica.healthy.load(); };
  int fewest = std::numeric_limits<int>::max();
  size_t tied = 0;
  for (const auto& replica : replicas_) {
    if (!eligible(*replica)) continue;
    const int outstanding = replica->outstanding.load();
    if (outstanding < fewest) {
      fewest = outstanding;
      tied = 0;
    }
    if (outstanding == fewest) ++tied;
  }
  if (tied == 0) return nullptr;
  size_t pick = round_robin_.fetch_add(1) % tied;
  for (const auto& replica : replicas_) {
    if (eligible(*replica) && replica->outstanding.load() == fewest && pick-- == 0) return replica.get();
  }
  // Counts moved between the passes: any eligible replica will do.
  for (const auto& replica : replicas_) {
    if (eligible(*replica)) return replica.get();
  }
  return nullptr;
}

asio::awaitable<api::Result<UpstreamReply>> UpstreamPool::forward(UpstreamRequest request) {
  const auto executor = co_await asio::this_coro::executor;
  asio::execution_context& context = asio::query(executor, asio::execution::context);
  const Clock::time_point started = Clock::now();
  if (in_flight_.fetch_add(1) >= settings_.max_in_flight) {
    --in_flight_;
    co_return api::ApiError::make(api::ErrorCode::overloaded, "Too many requests in flight to " + name_ + "; retry shortly");
  }
  struct InFlight {
    std::atomic<size_t>& count;
    ~InFlight() { --count; }
  } in_flight{in_flight_};
  Replica* replica = choose(nullptr);
  if (replica == nullptr) co_return unavailable(name_);

  for (int attempt = 0; attempt < 2; ++attempt) {
    if (Clock::now() >= request.deadline) co_return deadline_passed();
    // Take a verified-open pooled connection, else connect afresh.
    std::optional<tcp::socket> pooled;
    {
      std::lock_guard lock(replica->idle_mutex);
      for (size_t i = replica->idle.size(); i-- > 0 && !pooled;) {
        if (replica->idle[i].first != &context) continue;
        tcp::socket candidate = std::move(replica->idle[i].second);
        replica->idle.erase(replica->idle.begin() + static_cast<std::ptrdiff_t>(i));
        if (still_open(candidate)) pooled.emplace(std::move(candidate));
      }
    }
    beast::tcp_stream stream = pooled ? beast::tcp_stream(std::move(*pooled)) : beast::tcp_stream(executor);
    if (!pooled) {
      error_code error;
      tcp::resolver resolver(executor);
      stream.expires_at(std::min(request.deadline, Clock::now() + settings_.connect_timeout));
      const auto endpoints = co_await resolver.async_resolve(replica->address.host, replica->address.port,
                                                             asio::redirect_error(asio::use_awaitable, error));
      if (!error) {
        co_await stream.async_connect(endpoints, asio::redirect_error(asio::use_awaitable, error));
      }
      if (error) {
        replica->healthy.store(false);  // until its next good poll
        if (observer_.on_health) observer_.on_health(replica->url, false);
        if (Clock::now() >= request.deadline) co_return deadline_passed();
        Replica* other = attempt == 0 ? choose(replica) : nullptr;
        if (observer_.on_request) observer_.on_request(replica->url, other ? "retried" : "connect_error");
        if (other == nullptr) co_return unavailable(name_);
        replica = other;
        continue;
      }
      error_code ignored;
      stream.socket().set_option(tcp::no_delay(true), ignored);
    }

    ++replica->outstanding;
    struct Release {
      Replica* replica;
      ~Release() { --replica->outstanding; }
    } release{replica};

    http::request<http::string_body> upstream{http::verb::post, replica->address.base_path + request.target, 11};
    for (const auto& [name, value] : request.headers) upstream.insert(name, value);
    upstream.set(http::field::host, replica->address.host + ":" + replica->address.port);
    upstream.set("x-request-id", request.request_id);
    if (!settings_.credential.empty()) upstream.set(http::field::authorization, "Bearer " + settings_.credential);
    upstream.keep_alive(true);
    upstream.body() = std::move(request.body);
    upstream.prepare_payload();

    error_code error;
    stream.expires_at(request.deadline);
    co_await http::async_write(stream, upstream, asio::redirect_error(asio::use_awaitable, error));
    if (!error) {
      beast::flat_buffer buffer;
      http::response_parser<http::string_body> parser;
      parser.body_limit(settings_.response_cap);
      parser.header_limit(64 * 1024);
      // Beast 1.74 can miss a Content-Length over the body limit when header and body arrive
      // together, so the header is read and checked on its own, and the size checked again after.
      co_await http::async_read_header(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, error));
      if (!error && parser.content_length() && *parser.content_length() > settings_.response_cap) {
        error = http::error::body_limit;
      }
      if (!error) parse_buffered(parser, buffer, error);
      if (!error && !parser.is_done()) {
        co_await http::async_read(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, error));
      }
      if (!error && parser.get().body().size() > settings_.response_cap) error = http::error::body_limit;
      if (!error) {
        auto response = parser.release();
        UpstreamReply reply;
        reply.status = static_cast<int>(response.result_int());
        for (const auto& field : response) {
          const std::string_view name = field.name_string();
          if (is_hop_by_hop(name) || beast::iequals(name, "content-length")) continue;
          reply.headers.emplace_back(std::string(name), std::string(field.value()));
        }
        reply.body = std::move(response.body());
        reply.seconds = std::chrono::duration<double>(Clock::now() - started).count();
        if (response.keep_alive() && buffer.size() == 0) {
          std::lock_guard lock(replica->idle_mutex);
          replica->idle.emplace_back(&context, std::move(stream.socket()));
        }
        if (observer_.on_request) observer_.on_request(replica->url, "ok");
        co_return reply;
      }
    }
    if (error == beast::error::timeout) {
      if (observer_.on_request) observer_.on_request(replica->url, "timeout");
      co_return deadline_passed();
    }
    // A byte may have reached the worker: never retried.
    if (observer_.on_request) observer_.on_request(replica->url, "bad_response");
    co_return bad_response(name_);
  }
  co_return unavailable(name_);
}

asio::awaitable<void> UpstreamPool::poll_health() {
  const auto executor = co_await asio::this_coro::executor;
  asio::steady_timer timer(executor);
  while (true) {
    for (const auto& replica : replicas_) {
      bool healthy = false;
      error_code error;
      tcp::resolver resolver(executor);
      beast::tcp_stream stream(executor);
      stream.expires_after(settings_.health_timeout);
      const auto endpoints = co_await resolver.async_resolve(replica->address.host, replica->address.port,
                                                             asio::redirect_error(asio::use_awaitable, error));
      if (!error) co_await stream.async_connect(endpoints, asio::redirect_error(asio::use_awaitable, error));
      if (!error) {
        http::request<http::empty_body> probe{http::verb::get, replica->address.base_path + "/health", 11};
        probe.set(http::field::host, replica->address.host + ":" + replica->address.port);
        if (!settings_.credential.empty()) probe.set(http::field::authorization, "Bearer " + settings_.credential);
        probe.keep_alive(false);
        co_await http::async_write(stream, probe, asio::redirect_error(asio::use_awaitable, error));
        if (!error) {
          beast::flat_buffer buffer;
          http::response_parser<http::string_body> parser;
          parser.body_limit(1024 * 1024);
          co_await http::async_read(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, error));
          healthy = !error && parser.get().result_int() == 200;
        }
      }
      error_code ignored;
      stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
      replica->healthy.store(healthy);
      if (observer_.on_health) observer_.on_health(replica->url, healthy);
    }
    timer.expires_after(settings_.health_interval);
    error_code cancelled;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, cancelled));
    if (cancelled) co_return;
  }
}

}  // namespace s1::router
