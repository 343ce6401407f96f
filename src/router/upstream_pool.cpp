#include "router/upstream_pool.h"

#include "router/http_wire.h"
#include "router/socket_io.h"

#include <boost/asio.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <spdlog/spdlog.h>

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

api::ApiError unavailable(const std::string& pool) {
  return api::ApiError::make(api::ErrorCode::upstream_unavailable, "No worker of " + pool + " could be reached");
}

api::ApiError bad_response(const std::string& pool) {
  return api::ApiError::make(api::ErrorCode::upstream_bad_response, "A worker of " + pool + " sent a broken reply");
}

api::ApiError deadline_passed() {
  return api::ApiError::make(api::ErrorCode::deadline_exceeded, "The request's deadline passed waiting for a worker");
}

// A worker's reply parsed straight into the caller's UpstreamReply: end-to-end fields into its
// header list (Beast keeps the framing fields to itself), the body into its storage. No field
// container in between, whose fields were copied out again (measured: the container's inserts and
// the copies were ~2% of the router's CPU per request).
class ReplyParser : public http::basic_parser<false> {
 public:
  // `cap`: the reply's body limit (body_limit() is set to it as well).
  ReplyParser(UpstreamReply& reply, size_t cap) : reply_(reply), cap_(cap) {
    body_limit(cap);
    reply_.status = 0;
    reply_.headers.clear();
    reply_.body.clear();
  }

 private:
  void on_request_impl(http::verb, beast::string_view, beast::string_view, int, error_code&) override {}
  void on_response_impl(int code, beast::string_view, int, error_code&) override { reply_.status = code; }
  void on_field_impl(http::field, beast::string_view name, beast::string_view value, error_code&) override {
    if (UpstreamPool::is_hop_by_hop(name) || beast::iequals(name, "content-length")) return;
    reply_.headers.add(name, value);
  }
  void on_header_impl(error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>& length, error_code&) override {
    // A length over the cap fails the reply (feed_reply) before any body byte is taken.
    if (length) reply_.body.reserve(static_cast<size_t>(std::min<std::uint64_t>(*length, cap_)));
  }
  size_t on_body_impl(beast::string_view body, error_code&) override {
    reply_.body.append(body.data(), body.size());
    return body.size();
  }
  void on_chunk_header_impl(std::uint64_t, beast::string_view, error_code&) override {}
  size_t on_chunk_body_impl(std::uint64_t, beast::string_view body, error_code&) override {
    reply_.body.append(body.data(), body.size());
    return body.size();
  }
  void on_finish_impl(error_code&) override {}

  UpstreamReply& reply_;
  size_t cap_;
};

constexpr size_t reply_read_size = 16 * 1024;

// Feeds what `buffer` holds to the reply's parser, leaving what follows the reply there: false
// when the reply needs more bytes, true when it is whole or `error` tells why it is not.
bool feed_reply(ReplyParser& parser, beast::flat_buffer& buffer, size_t cap, error_code& error) {
  while (true) {
    const size_t used = parser.put(buffer.data(), error);
    buffer.consume(used);
    if (error == http::error::need_more) {
      error = {};
      return false;
    }
    if (error) return true;
    // Checked before the body is parsed: Beast 1.74 can miss a Content-Length over the body limit.
    if (parser.is_header_done() && parser.content_length() && *parser.content_length() > cap) {
      error = http::error::body_limit;
      return true;
    }
    if (parser.is_done()) return true;
    if (buffer.size() == 0 || used == 0) return false;
  }
}

// The worker closed the connection: the reply is complete only when framed by that end.
void end_reply(ReplyParser& parser, error_code& error) {
  error = parser.got_some() ? error_code{} : error_code(http::error::end_of_stream);
  if (!error) parser.put_eof(error);
}

}  // namespace

// A kept-alive connection to a worker with its read buffer, reused request after request.
struct UpstreamPool::Connection {
  explicit Connection(tcp::socket connected) : socket(std::move(connected)) {}
  // Destroyed after the socket, whose closing aborts a receive still pending into the buffer.
  beast::flat_buffer buffer;
  PendingReceive receive;  // pending while the connection waits in the pool, and for each reply
  tcp::socket socket;
  std::string target;  // the request's, after the replica's base path
  std::string head;  // the request head being sent
  bool peer_end_watched = false;  // epoll reports the worker's end (report_peer_end)
};

struct UpstreamPool::Replica {
  std::string url;
  ParsedUrl address;
  std::string host;  // host:port, the Host field
  std::atomic<bool> healthy{true};  // not yet polled counts as healthy
  std::atomic<Clock::rep> failed_at{0};  // the last failed poll or connect, on Clock; 0: never
  std::atomic<int> outstanding{0};
  std::mutex idle_mutex;
  // Pooled connections with the I/O context (thread) that owns them: a request reuses only its own
  // thread's connections, so no completion hops threads.
  std::vector<std::pair<asio::execution_context*, std::unique_ptr<Connection>>> idle;
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
    replica->host = replica->address.host + ":" + replica->address.port;
    replicas_.push_back(std::move(replica));
  }
}

UpstreamPool::~UpstreamPool() = default;

size_t UpstreamPool::replica_count() const { return replicas_.size(); }

size_t UpstreamPool::healthy_count() const {
  return static_cast<size_t>(std::count_if(replicas_.begin(), replicas_.end(),
                                           [](const auto& replica) { return replica->healthy.load(); }));
}

bool UpstreamPool::is_hop_by_hop(std::string_view name) {
  // Asked for every header of every forwarded request and reply: the length picks the candidates.
  using beast::iequals;
  if (name.size() >= 6 && iequals(name.substr(0, 6), "proxy-")) return true;
  switch (name.size()) {
    case 2: return iequals(name, "te");
    case 7: return iequals(name, "trailer") || iequals(name, "upgrade");
    case 10: return iequals(name, "connection") || iequals(name, "keep-alive");
    case 17: return iequals(name, "transfer-encoding");
    default: return false;
  }
}

UpstreamPool::Replica* UpstreamPool::choose(const std::vector<const Replica*>& excluded) {
  // Two passes instead of a list of the tied replicas: nothing allocated per request.
  auto eligible = [&excluded](const Replica& replica) {
    return replica.healthy.load() && std::find(excluded.begin(), excluded.end(), &replica) == excluded.end();
  };
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

UpstreamPool::Replica* UpstreamPool::least_recently_failed(const std::vector<const Replica*>& excluded) {
  // Panic routing (Envoy's): a poll can be wrong or late, and a replica that failed longest ago is
  // the likeliest to be back, so trying beats answering 502 untried.
  Replica* best = nullptr;
  Clock::rep earliest = std::numeric_limits<Clock::rep>::max();
  for (const auto& replica : replicas_) {
    if (std::find(excluded.begin(), excluded.end(), replica.get()) != excluded.end()) continue;
    const Clock::rep failed_at = replica->failed_at.load();
    if (failed_at < earliest) {
      earliest = failed_at;
      best = replica.get();
    }
  }
  return best;
}

void UpstreamPool::set_health(Replica& replica, bool healthy, std::string_view failure, bool first) {
  if (!healthy) replica.failed_at.store(Clock::now().time_since_epoch().count());
  if (replica.healthy.exchange(healthy) == healthy && !first) return;
  if (healthy) {
    spdlog::info("upstream {}: replica {} is healthy", name_, replica.url);
  } else {
    spdlog::info("upstream {}: replica {} is unhealthy: {}", name_, replica.url, failure);
  }
  if (observer_.on_health) observer_.on_health(replica.url, healthy);
}

asio::awaitable<std::optional<api::ApiError>> UpstreamPool::forward(const UpstreamRequest& request, UpstreamReply& reply) {
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
  Replica* replica = choose({});
  if (replica == nullptr) replica = least_recently_failed({});
  // The replicas whose connect failed, each tried once; filled (and allocated) only on failure.
  std::vector<const Replica*> unreachable;

  while (replica != nullptr) {
    if ((unreachable.empty() ? started : Clock::now()) >= request.deadline) co_return deadline_passed();
    // Take a pooled connection that is still open and silent, else connect afresh. Each pooled
    // connection keeps a receive pending, which the worker's close, an error or bytes the worker
    // should not have sent complete: such a connection is discarded here, known from epoll's
    // events without a system call per request (formerly a recv(MSG_PEEK) each time).
    //
    // Why a request is never sent twice: it is retried on another replica only when its connect
    // failed, that is before any byte of it was sent. A close that epoll has not yet reported to
    // this thread (in flight, or in the batch of events being handled) is not seen here: the
    // request is then written to a connection the worker is closing, its reply ends early, and the
    // client gets 502 upstream_bad_response, never a resend, since a byte may have reached the worker.
    // The peek this replaces had the same outcome for a close arriving just after it.
    std::unique_ptr<Connection> connection;
    while (!connection) {
      std::unique_ptr<Connection> candidate;
      {
        std::lock_guard lock(replica->idle_mutex);
        for (size_t i = replica->idle.size(); i-- > 0;) {
          if (replica->idle[i].first != &context) continue;
          candidate = std::move(replica->idle[i].second);
          replica->idle.erase(replica->idle.begin() + static_cast<std::ptrdiff_t>(i));
          break;
        }
      }
      if (!candidate) break;
      if (!candidate->receive.finished()) connection = std::move(candidate);
    }
    if (!connection) {
      error_code error;
      tcp::resolver resolver(executor);
      const auto endpoints = co_await resolver.async_resolve(replica->address.host, replica->address.port,
                                                             asio::redirect_error(asio::use_awaitable, error));
      tcp::socket socket(executor);
      if (!error) {
        DeadlineWatch::Scope connect_deadline(DeadlineWatch::of(executor), socket,
                                              std::min(request.deadline, Clock::now() + settings_.connect_timeout));
        co_await asio::async_connect(socket, endpoints, asio::redirect_error(asio::use_awaitable, error));
        if (connect_deadline.expired()) error = beast::error::timeout;
      }
      if (!error) {
        socket.set_option(tcp::no_delay(true), error);
        if (!error) socket.non_blocking(true, error);
      }
      if (error) {
        // No byte was sent: the request moves on to a healthy replica not yet tried, else to the
        // least recently failed of the others; 502 once every replica failed to connect.
        set_health(*replica, false, "connect failed: " + error.message());  // until its next good poll
        unreachable.push_back(replica);
        if (Clock::now() >= request.deadline) co_return deadline_passed();
        Replica* other = choose(unreachable);
        if (other == nullptr) other = least_recently_failed(unreachable);
        spdlog::info("upstream {}: request {} could not connect to {} ({}); {}", name_, request.request_id,
                     replica->url, error.message(), other ? "trying " + other->url : "no replica left: 502");
        if (observer_.on_request) observer_.on_request(replica->url, other ? "retried" : "connect_error");
        replica = other;
        continue;
      }
      connection = std::make_unique<Connection>(std::move(socket));
      connection->peer_end_watched = report_peer_end(connection->socket);
      // The connect went through the event loop, which may have reported the socket's events
      // already: this first receive tries the system call at once.
      connection->receive.start(connection->socket, connection->buffer, reply_read_size, FirstRead::at_once);
    }

    ++replica->outstanding;
    struct Release {
      Replica* replica;
      ~Release() { --replica->outstanding; }
    } release{replica};

    // Head and body in one write; the reply read with as few reads as it arrived in.
    connection->target.assign(replica->address.base_path).append(request.target);
    connection->head.clear();
    append_request_head(connection->head, RequestHead{connection->target, replica->host, request.headers.fields(),
                                                      request.request_id, settings_.credential, request.body.size()});
    std::array<asio::const_buffer, 2> out{asio::buffer(connection->head), asio::buffer(request.body)};
    std::optional<error_code> written = write_now(connection->socket, out);
    if (!written) written = co_await write_all(connection->socket, out, request.deadline);
    error_code error = *written;
    ReplyParser parser(reply, settings_.response_cap);
    parser.header_limit(64 * 1024);
    // The reply is read in this frame, with as few reads as it arrived in (a nested coroutine's frame
    // is a malloc in Asio 1.74); the first is the receive already pending: no read that finds nothing.
    // `drained`: the last read got fewer bytes than it asked, so the socket held nothing more then
    // (an end aside, which a read does not tell).
    bool drained = false;
    if (!error && !connection->receive.completed()) {
      DeadlineWatch::Scope scope(DeadlineWatch::of(executor), connection->socket, request.deadline);
      co_await connection->receive.completion();
      if (scope.expired()) error = beast::error::timeout;
    }
    size_t held = connection->buffer.size();
    size_t most = reply_read_size;  // as the pending receive was started
    if (!error) error = connection->receive.take(connection->buffer);
    while (!error) {
      drained = connection->buffer.size() - held < most;
      if (feed_reply(parser, connection->buffer, settings_.response_cap, error)) break;
      // Once the header told the body's size, the rest of it fits one read.
      most = reply_read_size;
      if (parser.is_header_done() && parser.content_length_remaining()) {
        most = std::max<size_t>(most, static_cast<size_t>(*parser.content_length_remaining()));
      }
      held = connection->buffer.size();
      const std::optional<error_code> now = read_now(connection->socket, connection->buffer, most);
      // Seen empty just now, and the loop has not run since: the wait needs no second try.
      error = now ? *now
                  : co_await read_some(connection->socket, connection->buffer, most, request.deadline,
                                       FirstRead::after_event);
    }
    if (error == asio::error::eof) end_reply(parser, error);
    if (!error && reply.body.size() > settings_.response_cap) error = http::error::body_limit;
    if (!error) {
      reply.seconds = std::chrono::duration<double>(Clock::now() - started).count();
      if (parser.keep_alive() && connection->buffer.size() == 0 && !peer_end_reported(connection->socket)) {
        // A worker that closes right after its reply may have its end arrive with the reply's last
        // bytes, and epoll reports the two as one event, which the reply's read has consumed; a
        // read that got fewer bytes than it asked does not tell that no end follows them. Where
        // epoll reports the end (report_peer_end), that event said so (checked above), and
        // anything arriving after a read that drained the socket raises a new event, which the
        // receive waits for: no read that finds nothing. An end arriving between the event and the
        // read is consumed by the read and reported by a later event; a request that takes the
        // connection before the loop has seen that event meets a closed connection (502, never a
        // resend), the window nginx has too. Elsewhere the receive tries at once (it finds nothing,
        // or the end): waiting for an event without knowing about the end gave 502s in e2e_router.
        const bool wait_for_event = connection->peer_end_watched && drained;
        connection->receive.start(connection->socket, connection->buffer, reply_read_size,
                                  wait_for_event ? FirstRead::after_event : FirstRead::at_once);
        std::lock_guard lock(replica->idle_mutex);
        replica->idle.emplace_back(&context, std::move(connection));
      }
      if (observer_.on_request) observer_.on_request(replica->url, "ok");
      co_return std::nullopt;
    }
    if (error == beast::error::timeout) {
      spdlog::info("upstream {}: request {} to {} passed its deadline: 504", name_, request.request_id, replica->url);
      if (observer_.on_request) observer_.on_request(replica->url, "timeout");
      co_return deadline_passed();
    }
    // A byte may have reached the worker: never retried.
    spdlog::info("upstream {}: request {} to {} got a broken reply ({}): 502", name_, request.request_id, replica->url,
                 error.message());
    if (observer_.on_request) observer_.on_request(replica->url, "bad_response");
    co_return bad_response(name_);
  }
  co_return unavailable(name_);
}

void UpstreamPool::close_idle_connections() {
  for (const auto& replica : replicas_) {
    std::lock_guard lock(replica->idle_mutex);
    replica->idle.clear();
  }
}

asio::awaitable<void> UpstreamPool::poll_health() {
  const auto executor = co_await asio::this_coro::executor;
  for (const auto& replica : replicas_) asio::co_spawn(executor, poll_replica(*replica), asio::detached);
}

asio::awaitable<void> UpstreamPool::poll_replica(Replica& replica) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  bool first = true;
  bool failing = false;  // the last poll failed
  while (true) {
    const std::string failure = co_await probe(replica);
    set_health(replica, failure.empty(), failure, first);
    first = false;
    const bool retry_soon = !failure.empty() && !failing;
    failing = !failure.empty();
    timer.expires_after(retry_soon ? std::min(settings_.health_retry, settings_.health_interval)
                                   : settings_.health_interval);
    error_code cancelled;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, cancelled));
    if (cancelled) co_return;
  }
}

asio::awaitable<std::string> UpstreamPool::probe(Replica& replica) {
  const auto executor = co_await asio::this_coro::executor;
  error_code error;
  tcp::resolver resolver(executor);
  beast::tcp_stream stream(executor);
  stream.expires_after(settings_.health_timeout);
  const auto endpoints = co_await resolver.async_resolve(replica.address.host, replica.address.port,
                                                         asio::redirect_error(asio::use_awaitable, error));
  if (error) co_return "cannot resolve " + replica.address.host + ": " + error.message();
  co_await stream.async_connect(endpoints, asio::redirect_error(asio::use_awaitable, error));
  if (error) co_return "GET /health: connect failed: " + error.message();
  http::request<http::empty_body> request{http::verb::get, replica.address.base_path + "/health", 11};
  request.set(http::field::host, replica.host);
  if (!settings_.credential.empty()) request.set(http::field::authorization, "Bearer " + settings_.credential);
  request.keep_alive(false);
  co_await http::async_write(stream, request, asio::redirect_error(asio::use_awaitable, error));
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(1024 * 1024);
  if (!error) co_await http::async_read(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, error));
  error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  if (error) co_return "GET /health: " + error.message();
  const int status = parser.get().result_int();
  if (status != 200) co_return "GET /health answered " + std::to_string(status);
  co_return std::string();
}

}  // namespace s1::router
