#include "server/http_server.h"

#include "api/openai_decisions.h"
#include "api/request.h"
#include "api/response.h"
#include "router/body_rewrite.h"
#include "router/buffered_parse.h"
#include "router/arena.h"
#include "router/decisions_relay.h"
#include "router/header_list.h"
#include "router/http_wire.h"
#include "router/socket_io.h"
#include "server/body_encoding.h"
#include "server/decide_handler.h"
#include "server/http_checks.h"
#include "server/log_sink.h"
#include "server/multipart.h"
#include "server/prepare_offload.h"
#include "server/reply.h"
#include "server/status_routes.h"

#include <boost/asio.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <limits>
#include <list>
#include <mutex>
#include <optional>
#include <thread>
#include <variant>


namespace s1::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using error_code = boost::system::error_code;

constexpr auto idle_timeout = std::chrono::seconds(75);
constexpr auto write_timeout = std::chrono::seconds(30);
constexpr size_t header_limit = 64 * 1024;
// After a refusal that leaves the client's body unread, the connection is read and discarded for
// this long before it is closed: closing with unread data resets the connection, and the reset can
// destroy the reply before a client still sending reads it (§11.6, nginx's lingering close).
constexpr auto linger_time = std::chrono::seconds(5);
// Once the drain budget is spent and the runners stopped, how long the answers still in flight get.
constexpr auto drain_grace = std::chrono::seconds(2);
// Accepting again after the descriptor limit was hit: a pause rather than a retry at once, which
// spins (the pending connection keeps the listening socket readable).
constexpr auto accept_back_off = std::chrono::milliseconds(100);

// A request's header fields come from its connection's arena; its body into storage the connection
// lends (the forwarded request's, which keeps its capacity).
using RequestParser = http::request_parser<http::string_body, router::ArenaAllocator<char>>;
using Request = http::request<http::string_body, http::basic_fields<router::ArenaAllocator<char>>>;

// "upstream;dur=" and the milliseconds as format_milliseconds writes them, in `text`: no allocation
// on the forwarding path.
std::string_view upstream_timing(std::array<char, 64>& text, double seconds) {
  constexpr std::string_view prefix = "upstream;dur=";
  std::copy(prefix.begin(), prefix.end(), text.begin());
  char* const end = text.data() + text.size();
  const auto written = std::to_chars(text.data() + prefix.size(), end, seconds * 1000.0, std::chars_format::fixed, 3);
  return {text.data(), static_cast<size_t>(written.ptr - text.data())};
}

struct Connection : std::enable_shared_from_this<Connection> {
  explicit Connection(tcp::socket socket) : stream(std::move(socket)) {}
  beast::tcp_stream stream;
  std::string head;  // the reply head being written, reused request after request
  bool idle = true;  // waiting for a request's headers; touched only on the connection's thread
  // Kept from one request to the next, so that a forwarded request allocates nothing once the
  // connection has served one of its size: the request's header fields, its id, the exchange with
  // the worker, and the reply's headers and body, given back after each write.
  router::Arena arena;
  std::string request_id;
  router::UpstreamRequest upstream;
  router::UpstreamReply upstream_reply;
  router::HeaderList spare_headers;
  std::string spare_body;
  router::PendingReceive receive;  // the next request's header, when it had not come yet
};

// End-to-end request headers a worker may see, into `headers`: no hop-by-hop, Host, Cookie, client
// credentials, or framing the router recomputes.
void forwardable_headers(const Request& request, router::HeaderList& headers) {
  const auto named_by_connection = http::token_list(request[http::field::connection]);
  headers.clear();
  for (const auto& field : request) {
    const std::string_view name = field.name_string();
    if (router::UpstreamPool::is_hop_by_hop(name) || beast::iequals(name, "host") || beast::iequals(name, "cookie") ||
        beast::iequals(name, "authorization") || beast::iequals(name, "content-length") ||
        beast::iequals(name, "expect") || beast::iequals(name, "x-request-id") ||
        beast::iequals(name, "content-type") || beast::iequals(name, "content-encoding")) {
      continue;
    }
    const bool listed = std::any_of(named_by_connection.begin(), named_by_connection.end(),
                                    [&](const auto& token) { return beast::iequals(token, name); });
    if (!listed) headers.add(name, field.value());
  }
  // The body forwarded is the JSON request, decoded and out of any multipart wrapping.
  headers.add("Content-Type", "application/json");
}

std::string_view query_of(std::string_view target) {
  const size_t question = target.find('?');
  return question == std::string_view::npos ? std::string_view() : target.substr(question);
}

// The worker's reply as the client gets it, into the storage the connection's last reply left.
Reply worker_reply(Connection& connection) {
  router::UpstreamReply& outcome = connection.upstream_reply;
  Reply reply;
  reply.headers = std::move(connection.spare_headers);
  reply.headers.clear();
  reply.status = outcome.status;
  reply.content_type = {};
  for (const auto& [name, value] : outcome.headers) {
    if (beast::iequals(name, "content-type")) {
      reply.content_type = value;
    } else {
      reply.headers.add(name, value);
    }
  }
  std::array<char, 64> timing;
  reply.headers.add("Server-Timing", upstream_timing(timing, outcome.seconds));
  reply.body = std::move(outcome.body);
  return reply;
}

}  // namespace

std::vector<std::unique_ptr<asio::io_context>> make_contexts(int threads) {
  std::vector<std::unique_ptr<asio::io_context>> contexts;
  for (int i = 0; i < std::max(threads, 1); ++i) contexts.push_back(std::make_unique<asio::io_context>(1));
  return contexts;
}

struct HttpServer::Impl {
  Impl(registry::ServerConfig server_options, registry::ModelRegistry& model_registry, Metrics& server_metrics)
      : options(std::move(server_options)),
        registry(model_registry),
        metrics(server_metrics),
        contexts(make_contexts(options.http_threads)),
        io(*contexts.front()),
        acceptor(io),
        signals(io, SIGINT, SIGTERM, SIGHUP),
        started_unix(std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count()) {
    register_route_series();
  }

  registry::ServerConfig options;
  registry::ModelRegistry& registry;
  Metrics& metrics;
  // One single-threaded context per I/O thread: a connection lives on one thread, so its handlers
  // never hop between threads (measured: cross-thread wake-ups dominated the router's latency).
  std::vector<std::unique_ptr<asio::io_context>> contexts;
  asio::io_context& io;  // the first context: accepting, signals, draining, health polls
  std::atomic<size_t> next_context{0};
  tcp::acceptor acceptor;
  asio::signal_set signals;
  int64_t started_unix;
  DecideHandler handler{options, registry, metrics};
  std::atomic<bool> draining{false};
  // Stops the models' runners once the drain budget is spent (ModelRunner::stop blocks).
  std::thread runner_stopper;
  std::atomic<bool> runners_stopped{false};
  std::atomic<size_t> open_connections{0};
  std::atomic<int64_t> in_flight{0};
  std::mutex connections_mutex;
  std::list<std::weak_ptr<Connection>> connections;

  asio::awaitable<void> accept_loop();
  asio::awaitable<void> session(std::shared_ptr<Connection> connection);
  // A forwarded request runs in `session`'s own frame: the checks before its body and the choice of
  // what serves it are plain calls that say what to await next, and the session awaits the pool's
  // exchange itself (each nested coroutine was a frame, a malloc in Asio 1.74, and a resume hop).
  struct EarlyReply {
    Reply reply;
    bool drain = false;  // read the body before replying, so that the connection stays usable
  };
  // The checks a request's head allows (§4.4's order): a reply that needs no body, or nullopt.
  std::optional<EarlyReply> check_head(const RequestParser& parser, const RouteMatch& match) const;
  Reply status_reply(Route route, std::string_view path) const;
  // Sets the body limit and feeds the parser the body bytes `buffer` holds: true when the request is
  // whole. Once per request: the parser counts the limit down as it takes chunks, so setting it again
  // would grant a chunked body a second allowance.
  bool body_from_buffer(RequestParser& parser, beast::flat_buffer& buffer, error_code& error) const;
  static Reply body_failure(const error_code& error, Route route);
  // The body as JSON: decoded (`coding`), out of its multipart wrapping, free of NUL bytes, with the
  // multipart body's uploads; or the refusal.
  using PreparedBody = std::variant<Reply, std::vector<api::UploadedPart>>;
  PreparedBody prepare_body(std::string& body, ContentCoding coding, std::string_view content_type,
                            Route route) const;
  // The same for the request's body: a compressed one (decoding takes milliseconds per MiB) on the
  // prepare pool, a 503 when that is full; an identity one here (a split and a scan, no copy).
  asio::awaitable<PreparedBody> prepare_request_body(Request& request, Route route);
  static asio::awaitable<void> linger_before_close(tcp::socket& socket);
  // The body's remaining bytes, after body_from_buffer; `failure` is the reply when it fails.
  asio::awaitable<bool> read_rest_of_body(Connection& connection, RequestParser& parser, beast::flat_buffer& buffer,
                                          Clock::time_point deadline, Route route, Reply& failure);

  asio::awaitable<Reply> forward_decisions(const Request& request,
                                           const api::DecisionsRequest& decisions, const registry::ServedModel& served,
                                           Clock::time_point deadline, const std::string& request_id);
  void begin_drain();
  asio::awaitable<void> drain_watch();
  void record(Route route, const Reply& reply, double seconds);

  // The series every request writes, per route (indexed by Route): registered with the metrics
  // once, so that a request's writes take no map lookup.
  static constexpr int highest_status = 999;  // a status line has three digits
  struct RouteSeries {
    std::string requests_prefix;  // route="…",status="  (the status and a quote follow)
    Metrics::HotSeries duration = 0;
    // s1serve_requests_total's series by status, plus one; 0 until the status's first request.
    std::array<std::atomic<Metrics::HotSeries>, highest_status + 1> requests{};
  };
  std::array<RouteSeries, static_cast<size_t>(Route::unknown) + 1> route_series;
  void register_route_series();
  Metrics::HotSeries requests_series(RouteSeries& series, int status);
};

HttpServer::HttpServer(registry::ServerConfig options, registry::ModelRegistry& registry, Metrics& metrics)
    : impl_(std::make_unique<Impl>(std::move(options), registry, metrics)) {}

HttpServer::~HttpServer() = default;

uint16_t HttpServer::listen() {
  const tcp::endpoint endpoint(asio::ip::make_address(impl_->options.host), impl_->options.port);
  impl_->acceptor.open(endpoint.protocol());
  impl_->acceptor.set_option(asio::socket_base::reuse_address(true));
  impl_->acceptor.bind(endpoint);
  impl_->acceptor.listen(asio::socket_base::max_listen_connections);
  return impl_->acceptor.local_endpoint().port();
}

void HttpServer::run() {
  Impl& impl = *impl_;
  impl.signals.async_wait([&impl](const error_code& error, int signal_number) {
    if (error) return;
    spdlog::info("received signal {}, draining", signal_number);
    impl.begin_drain();
  });
  asio::co_spawn(impl.io, impl.accept_loop(), asio::detached);
  for (const auto& model : impl.registry.models()) {
    if (model->pool) asio::co_spawn(impl.io, model->pool->poll_health(), asio::detached);
  }
  // Idle contexts must not return from run() before connections arrive.
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> keep_running;
  for (const auto& context : impl.contexts) keep_running.push_back(asio::make_work_guard(*context));
  std::vector<std::thread> threads;
  for (size_t i = 1; i < impl.contexts.size(); ++i) threads.emplace_back([&impl, i] { impl.contexts[i]->run(); });
  impl.io.run();
  for (auto& guard : keep_running) guard.reset();
  for (const auto& context : impl.contexts) context->stop();
  for (auto& thread : threads) thread.join();
  if (impl.runner_stopper.joinable()) impl.runner_stopper.join();
  for (const auto& model : impl.registry.models()) {
    if (model->pool) model->pool->close_idle_connections();
  }
}

void HttpServer::Impl::begin_drain() {
  if (draining.exchange(true)) return;
  error_code ignored;
  acceptor.close(ignored);
  std::lock_guard lock(connections_mutex);
  for (const auto& weak : connections) {
    if (auto connection = weak.lock()) {
      // An idle connection whose next request is already in its socket is left to answer it.
      asio::post(connection->stream.get_executor(), [connection] {
        if (connection->idle && peek_client(connection->stream.socket()) != ClientState::sent_more) {
          connection->stream.socket().close();
        }
      });
    }
  }
  asio::co_spawn(io, drain_watch(), asio::detached);
}

// Polls `done` every 20 ms until it holds or `give_up` passes.
template <class Done>
asio::awaitable<void> poll_until(asio::steady_timer& timer, Done done, Clock::time_point give_up) {
  while (!done() && Clock::now() < give_up) {
    timer.expires_after(std::chrono::milliseconds(20));
    error_code ignored;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }
}

asio::awaitable<void> HttpServer::Impl::drain_watch() {
  asio::steady_timer timer(io);
  const auto idle = [this] { return in_flight.load() == 0; };
  co_await poll_until(timer, idle, Clock::now() + options.drain_timeout);
  if (!idle()) {
    spdlog::warn("drain budget spent with {} requests in flight: those still queued get 503", in_flight.load());
    // Stopping a runner answers each job still queued with 503 model_unavailable and waits for the
    // running one to finish, whose answer is then written too. It blocks: off the event loop.
    runner_stopper = std::thread([this] {
      for (const auto& model : registry.models()) {
        if (model->runner) model->runner->stop();
      }
      runners_stopped = true;
    });
    co_await poll_until(timer, [this] { return runners_stopped.load(); }, Clock::time_point::max());
    co_await poll_until(timer, idle, Clock::now() + drain_grace);
  }
  for (const auto& context : contexts) context->stop();
}

asio::awaitable<void> HttpServer::Impl::accept_loop() {
  asio::steady_timer pause(io);
  // Each condition is logged when it begins, at warn the first time and at debug afterwards: under
  // sustained pressure it comes and goes with every connection that closes.
  bool at_cap = false;
  bool cap_logged = false;
  bool at_descriptor_limit = false;
  bool descriptors_logged = false;
  while (acceptor.is_open()) {
    error_code error;
    if (open_connections.load() >= options.max_connections) {
      if (!at_cap) {
        spdlog::log(cap_logged ? spdlog::level::debug : spdlog::level::warn,
                    "{} connections open (max_connections): accepting no more until one closes",
                    options.max_connections);
      }
      at_cap = cap_logged = true;
      pause.expires_after(std::chrono::milliseconds(10));
      co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, error));
      continue;
    }
    at_cap = false;
    asio::io_context& home = *contexts[next_context.fetch_add(1) % contexts.size()];
    tcp::socket socket = co_await acceptor.async_accept(home, asio::redirect_error(asio::use_awaitable, error));
    if (error == asio::error::no_descriptors || error == asio::error::no_buffer_space ||
        error == asio::error::no_memory || error.value() == ENFILE) {
      if (!at_descriptor_limit) {
        spdlog::log(descriptors_logged ? spdlog::level::debug : spdlog::level::warn,
                    "cannot accept a connection ({}): accepting again every {} ms until it succeeds", error.message(),
                    accept_back_off.count());
      }
      at_descriptor_limit = descriptors_logged = true;
      pause.expires_after(accept_back_off);
      co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, error));
      continue;
    }
    if (error) continue;
    at_descriptor_limit = false;
    socket.set_option(tcp::no_delay(true), error);
    socket.non_blocking(true, error);  // the router's socket I/O tries each system call first
    if (error) continue;
    ++open_connections;  // the session counts it down when it ends
    auto connection = std::make_shared<Connection>(std::move(socket));
    asio::co_spawn(connection->stream.get_executor(), session(connection), [](std::exception_ptr failure) {
      if (!failure) return;
      try {
        std::rethrow_exception(failure);
      } catch (const std::exception& unexpected) {
        spdlog::error("connection aborted by an unexpected error: {}", unexpected.what());
      }
    });
  }
}

void HttpServer::Impl::register_route_series() {
  for (size_t route = 0; route < route_series.size(); ++route) {
    const std::string labels = Metrics::render_labels({{"route", std::string(route_label(static_cast<Route>(route)))}});
    route_series[route].requests_prefix = labels + ",status=\"";
    route_series[route].duration = metrics.hot(Series{"s1serve_request_duration_seconds", labels});
  }
}

Metrics::HotSeries HttpServer::Impl::requests_series(RouteSeries& series, int status) {
  auto labels = [&] {
    char digits[16];
    const auto written = std::to_chars(digits, digits + sizeof digits, status);
    return series.requests_prefix + std::string(digits, written.ptr) + '"';
  };
  if (status < 0 || status > highest_status) return metrics.hot(Series{"s1serve_requests_total", labels()});
  // Threads racing on a status's first request register the same series and get the same number.
  std::atomic<Metrics::HotSeries>& known = series.requests[static_cast<size_t>(status)];
  Metrics::HotSeries plus_one = known.load(std::memory_order_relaxed);
  if (plus_one == 0) {
    plus_one = metrics.hot(Series{"s1serve_requests_total", labels()}) + 1;
    known.store(plus_one, std::memory_order_relaxed);
  }
  return plus_one - 1;
}

void HttpServer::Impl::record(Route route, const Reply& reply, double seconds) {
  RouteSeries& series = route_series[static_cast<size_t>(route)];
  metrics.add_counter(requests_series(series, reply.status));
  metrics.observe(series.duration, seconds);
  if (!reply.rejected.empty()) metrics.add_counter("s1serve_rejected_total", {{"reason", reply.rejected}});
}

asio::awaitable<void> HttpServer::Impl::session(std::shared_ptr<Connection> connection) {
  std::list<std::weak_ptr<Connection>>::iterator registration;
  {
    std::lock_guard lock(connections_mutex);
    registration = connections.insert(connections.end(), connection);
  }
  struct Counted {
    std::atomic<size_t>& open;
    ~Counted() { --open; }
  } counted{open_connections};
  beast::flat_buffer buffer;
  tcp::socket& socket = connection->stream.socket();
  // When the connection last became idle: the start of its wait for the next request's header.
  Clock::time_point idle_since = Clock::now();
  bool first_request = true;
  bool linger = false;
  while (true) {
    // Draining: a request already sent on this connection is still answered.
    if (draining.load() && buffer.size() == 0 && peek_client(socket) != ClientState::sent_more) break;
    connection->upstream.body.clear();
    RequestParser parser(std::piecewise_construct, std::make_tuple(std::move(connection->upstream.body)),
                         std::make_tuple(router::ArenaAllocator<char>(connection->arena)));
    parser.header_limit(header_limit);
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());  // the body limit is applied after the earlier checks (§4.4)
    connection->idle = true;
    // A new connection owes its first header at once; a kept-alive one may idle until its next
    // request's first byte, from which its header is owed.
    std::optional<Clock::time_point> header_started;
    if (first_request) header_started = idle_since;
    bool header_timed_out = false;
    // At concurrency the next request is often there already: read without a coroutine.
    std::optional<error_code> header = router::header_now(socket, buffer, parser);
    while (!header) {
      if (!header_started && (buffer.size() > 0 || parser.got_some())) header_started = Clock::now();
      // Awaited in this frame rather than by read_some's coroutine (a malloc each).
      connection->receive.start(socket, buffer, router::header_read_size, router::FirstRead::after_event);
      error_code read_error;
      if (!connection->receive.completed()) {
        const Clock::time_point wait_until =
            header_started ? *header_started + options.header_timeout : idle_since + idle_timeout;
        router::DeadlineWatch::Scope scope(router::DeadlineWatch::of(socket.get_executor()), socket, wait_until);
        co_await connection->receive.completion();
        if (scope.expired()) read_error = beast::error::timeout;
      }
      if (!read_error) read_error = connection->receive.take(buffer);
      header_timed_out = read_error == beast::error::timeout && header_started.has_value();
      header = router::header_after_read(read_error, socket, buffer, parser);
    }
    error_code error = *header;
    Request& request = parser.get();
    std::optional<api::ApiError> unreadable_head;
    if (error) {
      const std::string_view unparsed(static_cast<const char*>(buffer.data().data()), buffer.size());
      unreadable_head =
          header_timed_out
              ? api::ApiError::make(api::ErrorCode::request_timeout, "The request's header did not arrive in time")
              : head_parse_error(error, request.target(), request.count(http::field::content_length) > 0, unparsed);
      if (!unreadable_head) {
        spdlog::debug("connection closed while waiting for a request: {}", error.message());
        break;
      }
    }
    connection->idle = false;
    const Clock::time_point received = Clock::now();
    const Clock::time_point deadline = received + options.timeout;
    ++in_flight;  // the gauge is set when /metrics is read: no shared lock per request

    std::string& request_id = connection->request_id;
    unsigned version = 11;
    bool keep_alive = false;
    Route route = Route::unknown;
    bool head_only = false;
    std::string_view method = "-";
    std::string_view path = "-";
    std::string_view model = "-";
    std::optional<std::string_view> traceparent;
    Reply reply;
    if (unreadable_head) {
      assign_fresh_request_id(request_id);
      reply = error_reply(*unreadable_head, route);
      reply.close = true;
    } else {
      const std::optional<std::string_view> trace_id =
          request.count("traceparent") == 1 ? traceparent_trace_id(request["traceparent"]) : std::nullopt;
      if (trace_id) traceparent = request["traceparent"];
      if (request.count("x-request-id") == 1 && valid_request_id(request["x-request-id"])) {
        request_id.assign(request["x-request-id"]);
      } else if (trace_id) {
        request_id.assign(*trace_id);
      } else {
        assign_fresh_request_id(request_id);
      }
      version = request.version();
      keep_alive = request.keep_alive();
      method = request.method_string();
      path = target_path(request.target());
      const RouteMatch match = match_route(path);
      route = match.route;
      head_only = method == "HEAD";

      if (std::optional<EarlyReply> early = check_head(parser, match)) {
        reply = std::move(early->reply);
        error_code body_error;
        if (early->drain && !body_from_buffer(parser, buffer, body_error)) {
          Reply failure;
          if (body_error || !co_await read_rest_of_body(*connection, parser, buffer, deadline, route, failure)) {
            reply.close = true;
          }
        }
      } else {
        if (beast::iequals(request[http::field::expect], "100-continue")) {
          http::response<http::empty_body> interim{http::status::continue_, version};
          connection->stream.expires_at(deadline);
          error_code ignored;
          co_await http::async_write(connection->stream, interim, asio::redirect_error(asio::use_awaitable, ignored));
        }
        // The body usually came with its header: taken without a coroutine.
        error_code body_error;
        if (body_from_buffer(parser, buffer, body_error) ||
            (!body_error && co_await read_rest_of_body(*connection, parser, buffer, deadline, route, reply))) {
          PreparedBody prepared = co_await prepare_request_body(request, route);
          if (auto* refused = std::get_if<Reply>(&prepared)) {
            reply = std::move(*refused);
          } else {
            auto& uploads = std::get<std::vector<api::UploadedPart>>(prepared);
            // Not a conditional expression: GCC 12 miscompiles co_await in one.
            DecideHandler::Decision decision;
            if (route == Route::batch) {
              decision = co_await handler.run_batch(socket, request.body(), request_id, deadline);
            } else if (DecideHandler::decides_off_io(request.body())) {
              decision = co_await handler.decide_off_io(route, request.body(), uploads);
            } else {
              decision = handler.decide(route, request.body(), std::move(uploads));
            }
            if (auto* forward = std::get_if<DecideHandler::ForwardSystemOne>(&decision)) {
              model = forward->model;
              router::UpstreamRequest& upstream = connection->upstream;
              upstream.target.assign("/v1/systemone").append(query_of(request.target()));
              if (forward->renamed) {
                upstream.body = router::with_model(request.body(), forward->pool->upstream_model());
              } else {
                upstream.body = std::move(request.body());
              }
              forwardable_headers(request, upstream.headers);
              upstream.request_id = request_id;
              upstream.deadline = deadline;
              connection->upstream_reply.body = std::move(connection->spare_body);
              const auto failed = co_await forward->pool->forward(upstream, connection->upstream_reply);
              reply = failed ? handler.refusal(*failed, Route::systemone) : worker_reply(*connection);
            } else if (auto* relay = std::get_if<DecideHandler::ForwardDecisions>(&decision)) {
              model = relay->served->name;
              reply = co_await forward_decisions(request, relay->decisions, *relay->served, deadline, request_id);
            } else if (auto* local = std::get_if<DecideHandler::RunLocally>(&decision)) {
              model = local->served->name;
              reply = co_await handler.run_locally(socket, route, std::move(*local), deadline);
            } else {
              reply = std::move(std::get<Reply>(decision));
            }
          }
        } else if (body_error) {
          reply = body_failure(body_error, route);
        }
      }
    }
    const Clock::time_point finished = Clock::now();
    const double seconds = std::chrono::duration<double>(finished - received).count();
    record(route, reply, seconds);
    idle_since = finished;

    if (reply.send) {
      keep_alive = keep_alive && !reply.close && (!draining.load() || buffer.size() > 0);
      reply.headers.add("x-typesafe-request-id", request_id);
      if (traceparent) reply.headers.add("traceparent", *traceparent);
      // Head and body in one write, which completes at once unless the client reads slowly.
      const bool has_body = router::response_has_body(reply.status);
      connection->head.clear();
      router::append_response_head(connection->head,
                                   router::ResponseHead{reply.status, version, reply.content_type, request_id,
                                                        reply.headers.fields(), keep_alive,
                                                        has_body ? reply.body.size() : 0});
      const std::string_view body = has_body && !head_only ? std::string_view(reply.body) : std::string_view();
      std::array<asio::const_buffer, 2> out{asio::buffer(connection->head), asio::buffer(body)};
      std::optional<error_code> written = router::write_now(socket, out);
      if (!written) {
        written = co_await router::write_all(socket, out, finished + write_timeout);
        idle_since = Clock::now();
      }
      error = *written;
    }
    // After the reply is on its way, so that formatting the line is not part of the latency. The
    // target is logged without its query (it may carry keys), and cut: a 414's is long.
    spdlog::info("{} {} {} {:.3f}ms request_id={} model={}", method, path.substr(0, 256), reply.status,
                 seconds * 1000.0, request_id, model);
    --in_flight;
    // The reply's storage serves the next one.
    connection->spare_headers = std::move(reply.headers);
    connection->spare_body = std::move(reply.body);
    linger = !error && reply.send && reply.close;
    if (error) spdlog::debug("response write failed: {}", error.message());
    if (error || !reply.send || !keep_alive) break;
    first_request = false;
  }
  if (linger) co_await linger_before_close(socket);
  error_code ignored;
  socket.shutdown(tcp::socket::shutdown_send, ignored);
  connection->stream.close();
  std::lock_guard lock(connections_mutex);
  connections.erase(registration);
}

asio::awaitable<void> HttpServer::Impl::linger_before_close(tcp::socket& socket) {
  error_code ignored;
  socket.shutdown(tcp::socket::shutdown_send, ignored);
  asio::steady_timer timer(co_await asio::this_coro::executor, linger_time);
  timer.async_wait([&socket](const error_code& wait_error) {
    if (wait_error) return;
    error_code cancel_error;
    socket.cancel(cancel_error);
  });
  std::array<char, 16 * 1024> discarded;
  while (true) {
    error_code read_error;
    co_await socket.async_read_some(asio::buffer(discarded), asio::redirect_error(asio::use_awaitable, read_error));
    if (read_error) break;
  }
  timer.cancel();
}

asio::awaitable<HttpServer::Impl::PreparedBody> HttpServer::Impl::prepare_request_body(Request& request,
                                                                                     Route route) {
  // check_head refused the codings not served.
  const ContentCoding coding = content_coding(request[http::field::content_encoding]).value_or(ContentCoding::identity);
  if (coding == ContentCoding::identity) {
    co_return prepare_body(request.body(), coding, request[http::field::content_type], route);
  }
  struct Decoded {
    std::string body;
    PreparedBody prepared;
  };
  // The task owns what it reads: this coroutine may be gone before it runs (the server stopping).
  std::function<Decoded()> work = [this, coding, route, content_type = std::string(request[http::field::content_type]),
                                   body = std::move(request.body())]() mutable {
    Decoded decoded;
    decoded.prepared = prepare_body(body, coding, content_type, route);
    decoded.body = std::move(body);
    return decoded;
  };
  std::optional<Decoded> decoded =
      co_await on_pool<Decoded>(handler.prepare_pool(), runtime::PreparePool::Size::large, std::move(work));
  if (!decoded) co_return handler.refusal(preparing_overloaded(), route);
  request.body() = std::move(decoded->body);
  co_return std::move(decoded->prepared);
}

HttpServer::Impl::PreparedBody HttpServer::Impl::prepare_body(std::string& body, ContentCoding coding,
                                                              std::string_view content_type, Route route) const {
  if (coding != ContentCoding::identity) {
    auto decoded = decode_body(coding, body, options.max_body_bytes);
    if (!decoded) return error_reply(decoded.error(), route);
    body = std::move(decoded.value());
  }
  std::vector<api::UploadedPart> uploads;
  if (route == Route::systemone) {
    if (const std::optional<std::string_view> boundary = form_data_boundary(content_type)) {
      auto form = split_form_request(body, *boundary);
      if (!form) return error_reply(form.error(), route);
      body = std::move(form->json);
      uploads = std::move(form->uploads);
    }
  }
  if (has_nul_byte(body)) {
    return error_reply(api::ApiError::validation({api::validation::json_invalid("Raw NUL byte in the JSON body")}),
                       route);
  }
  return uploads;
}

asio::awaitable<bool> HttpServer::Impl::read_rest_of_body(Connection& connection, RequestParser& parser,
                                                          beast::flat_buffer& buffer, Clock::time_point deadline,
                                                          Route route, Reply& failure) {
  // A separate timer rather than the stream's expiry, which would close the socket before the 504.
  connection.stream.expires_never();
  auto timed_out = std::make_shared<bool>(false);
  asio::steady_timer timer(co_await asio::this_coro::executor, deadline);
  timer.async_wait([timed_out, owner = connection.shared_from_this()](const error_code& wait_error) {
    if (wait_error) return;
    *timed_out = true;
    error_code ignored;
    owner->stream.socket().cancel(ignored);
  });
  error_code error;
  co_await http::async_read(connection.stream, buffer, parser, asio::redirect_error(asio::use_awaitable, error));
  timer.cancel();
  if (*timed_out && error) error = beast::error::timeout;
  if (!error) co_return true;
  failure = body_failure(error, route);
  co_return false;
}

bool HttpServer::Impl::body_from_buffer(RequestParser& parser, beast::flat_buffer& buffer, error_code& error) const {
  parser.body_limit(options.max_body_bytes);
  router::parse_buffered(parser, buffer, error);
  return !error && parser.is_done();
}

Reply HttpServer::Impl::body_failure(const error_code& error, Route route) {
  Reply failure;
  if (std::optional<api::ApiError> malformed = body_parse_error(error);
      malformed && error != http::error::body_limit && error != beast::error::timeout) {
    failure = error_reply(*malformed, route);
  } else if (error == http::error::body_limit) {
    failure = error_reply(api::ApiError::make(api::ErrorCode::payload_too_large, "Request body too large"), route);
  } else if (error == beast::error::timeout) {
    failure = error_reply(api::ApiError::make(api::ErrorCode::deadline_exceeded,
                                              "The request's deadline passed while its body was uploading"),
                          route);
  } else {
    spdlog::debug("body read failed: {}", error.message());
    failure.send = false;  // the client went away: nobody to answer
  }
  failure.close = true;
  return failure;
}

std::optional<HttpServer::Impl::EarlyReply> HttpServer::Impl::check_head(const RequestParser& parser,
                                                                           const RouteMatch& match) const {
  const auto& request = parser.get();
  const Route route = match.route;
  const HeadFraming framing{request.version(),
                            request.target().size(),
                            request.count(http::field::host),
                            request.count(http::field::content_length),
                            request.count(http::field::transfer_encoding),
                            request[http::field::transfer_encoding]};
  if (std::optional<api::ApiError> error = framing_error(framing)) {
    EarlyReply early{error_reply(*error, route)};
    early.reply.close = true;  // where this request ends is not known
    return early;
  }
  // Early refusals leave the body unread: a small one is drained so the connection stays usable.
  auto refuse = [&](const api::ApiError& error) {
    EarlyReply early{error_reply(error, route)};
    if (!parser.is_done()) {
      const bool expects_continue = beast::iequals(request[http::field::expect], "100-continue");
      const auto length = parser.content_length();
      if (expects_continue || (length && *length > options.max_body_bytes) || !length) {
        early.reply.close = true;
      } else {
        early.drain = true;
      }
    }
    return early;
  };

  if (route == Route::unknown) return refuse(api::ApiError::make(api::ErrorCode::not_found, "Not found"));
  if (!method_allowed(route, request.method_string())) return refuse(api::ApiError::method_not_allowed(match.allow));
  const bool needs_auth =
      route == Route::systemone || route == Route::decisions || route == Route::batch || route == Route::models ||
      route == Route::model;
  if (needs_auth && !options.api_keys.empty()) {
    const bool single_header = request.count(http::field::authorization) == 1;
    if (!single_header || !authorized(request[http::field::authorization], options.api_keys)) {
      return refuse(api::ApiError::make(api::ErrorCode::unauthorized, "Missing or invalid API key"));
    }
  }
  if (route == Route::health || route == Route::models || route == Route::model || route == Route::metrics ||
      route == Route::livez || route == Route::readyz) {
    EarlyReply early{status_reply(route, target_path(request.target()))};
    early.drain = !parser.is_done();
    return early;
  }

  const bool one_type = request.count(http::field::content_type) == 1;
  const std::string_view content_type = request[http::field::content_type];
  const std::optional<std::string_view> boundary =
      one_type && route == Route::systemone ? form_data_boundary(content_type) : std::nullopt;
  if (!boundary && (!one_type || !acceptable_content_type(content_type))) {
    return refuse(api::ApiError::make(
        api::ErrorCode::unsupported_media_type,
        route == Route::systemone ? "Content-Type must be application/json (charset utf-8) or multipart/form-data"
                                  : "Content-Type must be application/json (charset utf-8)"));
  }
  if (boundary && boundary->empty()) {
    return refuse(api::ApiError::make(api::ErrorCode::invalid_multipart,
                                      "multipart/form-data without a valid boundary parameter"));
  }
  if (request.count(http::field::content_encoding) > 1 || !content_coding(request[http::field::content_encoding])) {
    return refuse(api::ApiError::make(api::ErrorCode::unsupported_media_type,
                                      "Content-Encoding must be one of identity, gzip, deflate or zstd"));
  }
  if (const auto length = parser.content_length(); length && *length > options.max_body_bytes) {
    EarlyReply early{error_reply(api::ApiError::make(api::ErrorCode::payload_too_large, "Request body too large"), route)};
    early.reply.close = true;
    return early;
  }
  return std::nullopt;
}
Reply HttpServer::Impl::status_reply(Route route, std::string_view path) const {
  Reply reply;
  if (route == Route::health || route == Route::readyz) {
    const StatusReply health = health_reply(registry);
    reply.status = health.status;
    reply.body = health.body;
    const bool warming = std::any_of(registry.models().begin(), registry.models().end(), [](const auto& model) {
      return model->runner && (model->runner->state() == runtime::ModelState::loading ||
                               model->runner->state() == runtime::ModelState::warming);
    });
    if (route == Route::readyz && warming) reply.headers.add("Retry-After", "1");
  } else if (route == Route::livez) {
    reply.body = "{\"status\":\"ok\"}";
  } else if (route == Route::models) {
    reply.body = models_body(registry, ModelListing{started_unix, options});
  } else if (route == Route::model) {
    const std::optional<std::string> id = model_id_of(path);
    const std::optional<std::string> body = id ? model_body(registry, *id, ModelListing{started_unix, options})
                                               : std::nullopt;
    if (body) {
      reply.body = *body;
    } else {
      api::ApiError error = api::ApiError::make(api::ErrorCode::not_found, "The model does not exist");
      error.openai_param = "model";
      reply = error_reply(error, route);
    }
  } else {
    for (const auto& model : registry.models()) {
      if (!model->runner) continue;  // upstream pools report through their observers
      const runtime::ModelRunner& runner = *model->runner;
      metrics.set_gauge("s1serve_queue_depth", {{"model", model->name}}, static_cast<double>(runner.queue_depth()));
      metrics.set_gauge("s1serve_queue_capacity", {{"model", model->name}},
                        static_cast<double>(runner.queue_capacity()));
      metrics.set_gauge("s1serve_model_ready", {{"model", model->name}},
                        runner.state() == runtime::ModelState::ready ? 1.0 : 0.0);
      // Totals the cache keeps, read when scraped.
      if (const runtime::PrefixCache* cache = runner.prefix_cache()) {
        const runtime::PrefixCache::Stats stats = cache->stats();
        const auto set = [&](const char* series, double value) {
          metrics.set_gauge(series, {{"model", model->name}}, value);
        };
        set("s1serve_prefix_cache_hits_total", static_cast<double>(stats.hits));
        set("s1serve_prefix_cache_misses_total", static_cast<double>(stats.misses));
        set("s1serve_prefix_cache_evictions_total", static_cast<double>(stats.evictions));
        set("s1serve_prefix_cache_entries", static_cast<double>(stats.entries));
        set("s1serve_prefix_cache_bytes", static_cast<double>(stats.bytes));
        set("s1serve_prefix_cache_capacity_bytes", static_cast<double>(stats.capacity_bytes));
      }
    }
    metrics.set_gauge(Series{"s1serve_in_flight_requests", ""}, static_cast<double>(in_flight.load()));
    // A total the log sink keeps, read when scraped like the gauge above.
    metrics.set_gauge(Series{"s1serve_log_lines_dropped_total", ""}, static_cast<double>(dropped_log_lines()));
    reply.content_type = "text/plain; version=0.0.4; charset=utf-8";
    reply.body = metrics.render();
  }
  return reply;
}



asio::awaitable<Reply> HttpServer::Impl::forward_decisions(const Request& request,
                                                           const api::DecisionsRequest& decisions,
                                                           const registry::ServedModel& served,
                                                           Clock::time_point deadline, const std::string& request_id) {
  router::UpstreamPool& pool = *served.pool;
  api::Json body = api::decisions_to_system_one_body(decisions);
  body["model"] = pool.upstream_model();
  router::UpstreamRequest upstream;
  upstream.target.assign("/v1/systemone").append(query_of(request.target()));
  api::append_json(upstream.body, body);
  forwardable_headers(request, upstream.headers);
  upstream.request_id = request_id;
  upstream.deadline = deadline;
  router::UpstreamReply outcome;
  if (auto failed = co_await pool.forward(upstream, outcome)) co_return handler.refusal(*failed, Route::decisions);
  Reply reply;
  reply.status = outcome.status;
  if (outcome.status != 200) {
    reply.body = router::openai_error_from_worker(outcome.status, outcome.body);
    co_return reply;
  }
  auto result = router::decisions_result_from_worker(decisions, outcome.body, served.name);
  if (!result) co_return error_reply(result.error(), Route::decisions);
  reply.body = api::serialize_decisions_response(decisions, result.value());
  std::array<char, 64> timing;
  reply.headers.add("Server-Timing", upstream_timing(timing, outcome.seconds));
  co_return reply;
}

}  // namespace s1::server
