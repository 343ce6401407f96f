// The forwarding path's socket I/O on real loopback sockets: deadlines without per-wait timers,
// whole writes, header reads that keep pipelined bytes, and replies from a canned worker framed by
// Content-Length, by chunks and by the connection's end.
#include "router/buffered_parse.h"
#include "router/socket_io.h"
#include "router/upstream_pool.h"

#include <boost/asio.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http.hpp>
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace s1::router {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
using namespace std::chrono_literals;

struct Loopback {
  explicit Loopback(asio::io_context& io) : acceptor(io, {asio::ip::make_address("127.0.0.1"), 0}), near(io), far(io) {
    near.connect(acceptor.local_endpoint());
    acceptor.accept(far);
    near.non_blocking(true);
    far.non_blocking(true);
  }
  tcp::acceptor acceptor;
  tcp::socket near;
  tcp::socket far;
};

// Runs `body` as a coroutine on `io` until it returns; rethrows its failure. (A deadline watch's
// timer stays armed for its last deadline: the context is stopped rather than run dry.)
void run(asio::io_context& io, std::function<asio::awaitable<void>()> body) {
  std::exception_ptr failure;
  asio::co_spawn(io, body(), [&failure, &io](std::exception_ptr error) {
    failure = error;
    io.stop();
  });
  io.run();
  if (failure) std::rethrow_exception(failure);
}

std::string text(const beast::flat_buffer& buffer) { return beast::buffers_to_string(buffer.data()); }

TEST(SocketIo, DeadlineWatchOfALaterContextIsItsOwn) {
  // Contexts made one after another often get the same address: each has its own watch.
  for (int i = 0; i < 3; ++i) {
    auto io = std::make_unique<asio::io_context>();
    DeadlineWatch& watch = DeadlineWatch::of(io->get_executor());
    EXPECT_EQ(&watch, &asio::use_service<DeadlineWatch>(*io));
    EXPECT_EQ(&DeadlineWatch::of(io->get_executor()), &watch);
  }
}

TEST(SocketIo, ReadSomeTimesOutAtItsDeadline) {
  asio::io_context io;
  Loopback pair(io);
  run(io, [&]() -> asio::awaitable<void> {
    beast::flat_buffer buffer;
    const Clock::time_point started = Clock::now();
    const error_code error = co_await read_some(pair.near, buffer, 1024, started + 50ms);
    EXPECT_EQ(error, beast::error::timeout);
    EXPECT_GE(Clock::now() - started, 50ms);
    EXPECT_LT(Clock::now() - started, 2s);
  });
}

TEST(SocketIo, ReadSomeReturnsWhatArrivedAndWhatArrivesLater) {
  asio::io_context io;
  Loopback pair(io);
  asio::write(pair.far, asio::buffer(std::string("hello")));
  asio::steady_timer later(io, 30ms);
  later.async_wait([&](const error_code&) { asio::write(pair.far, asio::buffer(std::string(" world"))); });
  run(io, [&]() -> asio::awaitable<void> {
    beast::flat_buffer buffer;
    EXPECT_FALSE(co_await read_some(pair.near, buffer, 1024, Clock::now() + 5s));
    EXPECT_EQ(text(buffer), "hello");
    EXPECT_FALSE(co_await read_some(pair.near, buffer, 1024, Clock::now() + 5s));
    EXPECT_EQ(text(buffer), "hello world");
  });
}

TEST(SocketIo, ReadSomeSeesBytesThatArriveBetweenReads) {
  asio::io_context io;
  Loopback pair(io);
  run(io, [&]() -> asio::awaitable<void> {
    beast::flat_buffer buffer;
    asio::write(pair.far, asio::buffer(std::string("first")));
    EXPECT_FALSE(co_await read_some(pair.near, buffer, 1024, Clock::now() + 5s));
    EXPECT_EQ(text(buffer), "first");
    // Written while nothing waits on the socket: its edge must not be lost.
    asio::write(pair.far, asio::buffer(std::string(" second")));
    EXPECT_FALSE(co_await read_some(pair.near, buffer, 1024, Clock::now() + 5s));
    EXPECT_EQ(text(buffer), "first second");
    asio::write(pair.far, asio::buffer(std::string(" third")));
    pair.far.shutdown(tcp::socket::shutdown_send);
    EXPECT_FALSE(co_await read_some(pair.near, buffer, 1024, Clock::now() + 5s));
    EXPECT_EQ(text(buffer), "first second third");
    EXPECT_EQ(co_await read_some(pair.near, buffer, 1024, Clock::now() + 5s), asio::error::eof);
  });
}

TEST(SocketIo, ReadSomeThatFillsItsBufferReadsTheRestAtOnce) {
  asio::io_context io;
  Loopback pair(io);
  run(io, [&]() -> asio::awaitable<void> {
    beast::flat_buffer buffer;
    asio::write(pair.far, asio::buffer(std::string("0123456789")));
    EXPECT_FALSE(co_await read_some(pair.near, buffer, 4, Clock::now() + 5s));
    EXPECT_EQ(text(buffer), "0123");
    EXPECT_FALSE(co_await read_some(pair.near, buffer, 4, Clock::now() + 5s));
    EXPECT_FALSE(co_await read_some(pair.near, buffer, 4, Clock::now() + 5s));
    EXPECT_EQ(text(buffer), "0123456789");
    // Short: the next read waits for what the peer sends later.
    asio::steady_timer later(co_await asio::this_coro::executor, 20ms);
    later.async_wait([&](const error_code&) { asio::write(pair.far, asio::buffer(std::string("!"))); });
    EXPECT_FALSE(co_await read_some(pair.near, buffer, 4, Clock::now() + 5s));
    EXPECT_EQ(text(buffer), "0123456789!");
  });
}

// A read that waits for epoll's event before reading still sees what arrived since the socket was
// last seen empty: bytes, the peer's close, bytes that arrive later, and its deadline holds.
TEST(SocketIo, ReadAfterEventSeesWhatArrivedSinceTheSocketWasSeenEmpty) {
  asio::io_context io;
  Loopback pair(io);
  run(io, [&]() -> asio::awaitable<void> {
    beast::flat_buffer buffer;
    asio::write(pair.far, asio::buffer(std::string("reply")));
    EXPECT_FALSE(co_await read_some(pair.near, buffer, 1024, Clock::now() + 5s, FirstRead::after_event));
    EXPECT_EQ(text(buffer), "reply");
    asio::steady_timer later(co_await asio::this_coro::executor, 20ms);
    later.async_wait([&](const error_code&) { asio::write(pair.far, asio::buffer(std::string(" later"))); });
    EXPECT_FALSE(co_await read_some(pair.near, buffer, 1024, Clock::now() + 5s, FirstRead::after_event));
    EXPECT_EQ(text(buffer), "reply later");
    const Clock::time_point started = Clock::now();
    EXPECT_EQ(co_await read_some(pair.near, buffer, 1024, started + 30ms, FirstRead::after_event), beast::error::timeout);
    EXPECT_GE(Clock::now() - started, 30ms);
    pair.far.shutdown(tcp::socket::shutdown_send);
    EXPECT_EQ(co_await read_some(pair.near, buffer, 1024, Clock::now() + 5s, FirstRead::after_event), asio::error::eof);
  });
}

TEST(SocketIo, EachWaitKeepsItsOwnDeadline) {
  asio::io_context io;
  Loopback slow(io);
  Loopback quick(io);
  asio::steady_timer answer(io, 120ms);
  answer.async_wait([&](const error_code&) { asio::write(slow.far, asio::buffer(std::string("late"))); });
  bool slow_done = false;
  bool quick_done = false;
  const Clock::time_point started = Clock::now();
  // The later deadline is watched first: the earlier one must still fire on time.
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    beast::flat_buffer buffer;
    EXPECT_FALSE(co_await read_some(slow.near, buffer, 1024, started + 2s));
    EXPECT_EQ(text(buffer), "late");
    slow_done = true;
    if (quick_done) io.stop();
  }, asio::detached);
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    beast::flat_buffer buffer;
    EXPECT_EQ(co_await read_some(quick.near, buffer, 1024, started + 40ms), beast::error::timeout);
    EXPECT_LT(Clock::now() - started, 120ms);
    quick_done = true;
    if (slow_done) io.stop();
  }, asio::detached);
  io.run();
  EXPECT_TRUE(slow_done);
  EXPECT_TRUE(quick_done);
}

// A wait that ends before its deadline leaves the timer armed for it; the deadlines linked after it,
// in any order, still fire on time, and a wait that gets its bytes is not cancelled.
TEST(SocketIo, DeadlinesFireOnTimeWhateverOrderTheyCameIn) {
  asio::io_context io;
  Loopback answered_early(io);
  Loopback silent(io);
  Loopback answered_late(io);
  const Clock::time_point started = Clock::now();
  asio::steady_timer early(io, 5ms);
  early.async_wait([&](const error_code&) { asio::write(answered_early.far, asio::buffer(std::string("a"))); });
  asio::steady_timer late(io, 100ms);
  late.async_wait([&](const error_code&) { asio::write(answered_late.far, asio::buffer(std::string("c"))); });
  int done = 0;
  auto wait = [&](Loopback& pair, Clock::time_point deadline, error_code expected) -> asio::awaitable<void> {
    beast::flat_buffer buffer;
    EXPECT_EQ(co_await read_some(pair.near, buffer, 1024, deadline), expected);
    if (++done == 3) io.stop();
  };
  asio::co_spawn(io, wait(answered_late, started + 2s, {}), asio::detached);
  asio::co_spawn(io, wait(answered_early, started + 20ms, {}), asio::detached);
  asio::co_spawn(io, wait(silent, started + 60ms, beast::error::timeout), asio::detached);
  io.run();
  EXPECT_EQ(done, 3);
  EXPECT_LT(Clock::now() - started, 1s);
}

TEST(SocketIo, WriteAllSendsEveryByteToASlowReader) {
  asio::io_context io;
  Loopback pair(io);
  const std::string head = "head:";
  std::string body(8 << 20, '\0');
  for (size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>('a' + i % 26);
  bool written = false;
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    EXPECT_FALSE(co_await write_all(pair.near, {asio::buffer(head), asio::buffer(body)}, Clock::now() + 10s));
    written = true;
  }, asio::detached);
  std::string received;
  run(io, [&]() -> asio::awaitable<void> {
    beast::flat_buffer buffer;
    while (received.size() < head.size() + body.size()) {
      asio::steady_timer pause(co_await asio::this_coro::executor, 1ms);
      co_await pause.async_wait(asio::use_awaitable);
      if (co_await read_some(pair.far, buffer, 256 * 1024, Clock::now() + 5s)) break;
      received += text(buffer);
      buffer.consume(buffer.size());
    }
  });
  EXPECT_TRUE(written);
  EXPECT_TRUE(received == head + body);
}

// A write the socket takes whole completes without waiting; one it cannot take whole is left,
// advanced past what was taken, for write_all.
TEST(SocketIo, WriteNowTakesWhatTheSocketTakesAtOnce) {
  asio::io_context io;
  Loopback pair(io);
  const std::string head = "head ", small = "body";
  std::array<asio::const_buffer, 2> buffers{asio::buffer(head), asio::buffer(small)};
  const auto written = write_now(pair.near, buffers);
  ASSERT_TRUE(written.has_value());
  EXPECT_FALSE(*written);
  std::string received(9, '\0');
  asio::read(pair.far, asio::buffer(received));
  EXPECT_EQ(received, "head body");

  const std::string large(64 << 20, 'x');
  std::array<asio::const_buffer, 2> rest{asio::buffer(large), asio::const_buffer()};
  EXPECT_FALSE(write_now(pair.near, rest).has_value());
  EXPECT_GT(rest[0].size(), 0u);
  EXPECT_LT(rest[0].size(), large.size());
}

TEST(SocketIo, WriteAllTimesOutWhenNobodyReads) {
  asio::io_context io;
  Loopback pair(io);
  const std::string body(64 << 20, 'x');
  run(io, [&]() -> asio::awaitable<void> {
    EXPECT_EQ(co_await write_all(pair.near, {asio::buffer(body), asio::const_buffer()}, Clock::now() + 50ms),
              beast::error::timeout);
  });
}

TEST(SocketIo, ReadHeaderKeepsAPipelinedRequestInTheBuffer) {
  asio::io_context io;
  Loopback pair(io);
  const std::string first = "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc";
  const std::string second = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  // The first header arrives in two pieces, the second request with the first's end.
  asio::write(pair.far, asio::buffer(first.substr(0, 20)));
  asio::steady_timer later(io, 20ms);
  later.async_wait([&](const error_code&) { asio::write(pair.far, asio::buffer(first.substr(20) + second)); });
  run(io, [&]() -> asio::awaitable<void> {
    beast::flat_buffer buffer;
    // As the server reads a request's header: what is there at once, then reads as it arrives.
    auto read_header = [&](auto& parser, Clock::time_point deadline) -> asio::awaitable<error_code> {
      std::optional<error_code> header = header_now(pair.near, buffer, parser);
      while (!header) {
        const error_code error = co_await read_some(pair.near, buffer, header_read_size, deadline, FirstRead::after_event);
        header = header_after_read(error, pair.near, buffer, parser);
      }
      co_return *header;
    };
    http::request_parser<http::string_body> one;
    // The first piece is read at once; the rest must be waited for.
    EXPECT_FALSE(header_now(pair.near, buffer, one).has_value());
    EXPECT_FALSE(one.is_header_done());
    EXPECT_FALSE(co_await read_header(one, Clock::now() + 5s));
    error_code error;
    parse_buffered(one, buffer, error);
    EXPECT_FALSE(error);
    EXPECT_TRUE(one.is_done());
    EXPECT_EQ(one.get().body(), "abc");
    http::request_parser<http::string_body> two;
    // Already buffered: whole without a wait.
    EXPECT_EQ(header_now(pair.near, buffer, two), std::optional<error_code>(error_code()));
    EXPECT_EQ(two.get().target(), "/health");
    http::request_parser<http::string_body> three;
    EXPECT_FALSE(header_now(pair.near, buffer, three).has_value());
    EXPECT_EQ(co_await read_header(three, Clock::now() + 30ms), beast::error::timeout);
  });
}

TEST(SocketIo, HeaderNowTellsAClosedStreamFromACutHeader) {
  asio::io_context io;
  Loopback pair(io);
  beast::flat_buffer buffer;
  http::request_parser<http::string_body> none;
  pair.far.shutdown(tcp::socket::shutdown_send);
  EXPECT_EQ(header_now(pair.near, buffer, none), std::optional<error_code>(http::error::end_of_stream));

  Loopback cut_pair(io);
  asio::write(cut_pair.far, asio::buffer(std::string("GET /health HTTP/1.1\r\nHo")));
  cut_pair.far.shutdown(tcp::socket::shutdown_send);
  beast::flat_buffer cut_buffer;
  http::request_parser<http::string_body> cut;
  EXPECT_EQ(header_now(cut_pair.near, cut_buffer, cut), std::optional<error_code>(http::error::partial_message));
}

// A worker that serves one connection: for each canned reply it reads one request, then writes the
// reply's pieces with a pause between them; "" closes the connection.
struct CannedWorker {
  explicit CannedWorker(asio::io_context& io) : acceptor(io, {asio::ip::make_address("127.0.0.1"), 0}) {}
  std::string url() const { return "http://127.0.0.1:" + std::to_string(acceptor.local_endpoint().port()); }

  asio::awaitable<void> serve(std::vector<std::vector<std::string>> replies) {
    tcp::socket socket = co_await acceptor.async_accept(asio::use_awaitable);
    std::string pending;
    for (const auto& pieces : replies) {
      http::request_parser<http::string_body> parser;
      beast::flat_buffer buffer;
      co_await http::async_read(socket, buffer, parser, asio::use_awaitable);
      requests.push_back(parser.get());
      for (const std::string& piece : pieces) {
        if (piece.empty()) {
          socket.close();
          co_return;
        }
        co_await asio::async_write(socket, asio::buffer(piece), asio::use_awaitable);
        asio::steady_timer pause(co_await asio::this_coro::executor, 5ms);
        co_await pause.async_wait(asio::use_awaitable);
      }
    }
    // Keeps the connection open until the test ends.
    char byte = 0;
    error_code ignored;
    co_await socket.async_read_some(asio::buffer(&byte, 1), asio::redirect_error(asio::use_awaitable, ignored));
  }

  tcp::acceptor acceptor;
  std::vector<http::request<http::string_body>> requests;
};

struct Exchange {
  std::optional<UpstreamReply> reply;
  std::optional<api::ErrorCode> error;
};

std::vector<api::Header> fields_of(const HeaderList& headers) { return {headers.begin(), headers.end()}; }

std::vector<Exchange> forward_all(const std::vector<std::vector<std::string>>& replies, size_t requests,
                                  std::chrono::milliseconds timeout = 5000ms, size_t cap = 1024) {
  asio::io_context io;
  CannedWorker worker(io);
  UpstreamSettings settings;
  settings.urls = {worker.url()};
  settings.response_cap = cap;
  UpstreamPool pool("canned", settings);
  asio::co_spawn(io, worker.serve(replies), asio::detached);
  std::vector<Exchange> exchanges;
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    for (size_t i = 0; i < requests; ++i) {
      UpstreamRequest request;
      request.target = "/v1/systemone";
      request.body = R"({"model":"canned"})";
      request.headers.add("Content-Type", "application/json");
      request.request_id = "r" + std::to_string(i);
      request.deadline = Clock::now() + timeout;
      UpstreamReply reply;
      const auto failed = co_await pool.forward(request, reply);
      Exchange exchange;
      if (failed) {
        exchange.error = failed->code;
      } else {
        exchange.reply = std::move(reply);
      }
      exchanges.push_back(std::move(exchange));
    }
    io.stop();
  }, asio::detached);
  io.run();
  for (size_t i = 0; i < worker.requests.size(); ++i) {
    EXPECT_EQ(worker.requests[i].body(), R"({"model":"canned"})");
    EXPECT_EQ(worker.requests[i]["x-request-id"], "r" + std::to_string(i));
  }
  return exchanges;
}

TEST(UpstreamExchange, ContentLengthRepliesInPiecesOverOneKeptAliveConnection) {
  const auto exchanges = forward_all({{"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Le", "ngth: 9\r\n\r\n{\"a\":", "1}\r\n"},
                                      {"HTTP/1.1 422 Unprocessable Entity\r\nContent-Length: 2\r\nX-Worker: w\r\n\r\n{}"}},
                                     2);
  ASSERT_EQ(exchanges.size(), 2u);
  ASSERT_TRUE(exchanges[0].reply);
  EXPECT_EQ(exchanges[0].reply->status, 200);
  EXPECT_EQ(exchanges[0].reply->body, "{\"a\":1}\r\n");
  ASSERT_TRUE(exchanges[1].reply);
  EXPECT_EQ(exchanges[1].reply->status, 422);
  EXPECT_EQ(exchanges[1].reply->body, "{}");
  const std::vector<api::Header> expected = {{"X-Worker", "w"}};
  EXPECT_EQ(fields_of(exchanges[1].reply->headers), expected);
}

// A server's pools outlive its I/O contexts: their kept-alive sockets must be closed before the
// contexts go (the ASan build sees a use after free otherwise).
TEST(UpstreamExchange, KeptAliveConnectionsCloseBeforeTheirContextGoes) {
  UpstreamSettings settings;
  std::optional<UpstreamPool> pool;
  {
    asio::io_context io;
    CannedWorker worker(io);
    settings.urls = {worker.url()};
    pool.emplace("canned", settings);
    asio::co_spawn(io, worker.serve({{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"}}), asio::detached);
    bool replied = false;
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
      UpstreamRequest request;
      request.target = "/v1/systemone";
      request.body = "{}";
      request.deadline = Clock::now() + 5s;
      UpstreamReply reply;
      replied = !co_await pool->forward(request, reply);
      io.stop();
    }, asio::detached);
    io.run();
    EXPECT_TRUE(replied);
    pool->close_idle_connections();
  }
  pool.reset();
}

TEST(UpstreamExchange, ChunkedReplyIsReassembled) {
  const auto exchanges = forward_all(
      {{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n4\r\n{\"a\"\r\n", "3\r\n:1}\r\n0\r\n\r\n"}}, 1);
  ASSERT_TRUE(exchanges.at(0).reply);
  EXPECT_EQ(exchanges[0].reply->body, "{\"a\":1}");
  const std::vector<api::Header> expected = {{"Content-Type", "application/json"}};
  EXPECT_EQ(fields_of(exchanges[0].reply->headers), expected);  // Transfer-Encoding is hop-by-hop
}

TEST(UpstreamExchange, ReplyFramedByTheConnectionsEnd) {
  const auto exchanges = forward_all({{"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{\"a\":", "2}", ""}}, 1);
  ASSERT_TRUE(exchanges.at(0).reply);
  EXPECT_EQ(exchanges[0].reply->body, "{\"a\":2}");
}

TEST(UpstreamExchange, NoContentHasNoBody) {
  const auto exchanges = forward_all({{"HTTP/1.1 204 No Content\r\n\r\n"}}, 1);
  ASSERT_TRUE(exchanges.at(0).reply);
  EXPECT_EQ(exchanges[0].reply->status, 204);
  EXPECT_EQ(exchanges[0].reply->body, "");
}

TEST(UpstreamExchange, OversizeAndBrokenRepliesAreBadResponses) {
  // Content-Length over the cap, chunks over the cap, an end before the promised length, garbage.
  const std::vector<std::vector<std::string>> broken = {
      {"HTTP/1.1 200 OK\r\nContent-Length: 1025\r\n\r\n{}"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n400\r\n" + std::string(1024, 'x') + "\r\n", "1\r\nx\r\n0\r\n\r\n"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}", ""},
      {"not http\r\n\r\n"},
      {""},
  };
  for (const auto& reply : broken) {
    const auto exchanges = forward_all({reply}, 1);
    ASSERT_EQ(exchanges.size(), 1u);
    EXPECT_EQ(exchanges[0].error, api::ErrorCode::upstream_bad_response) << reply.at(0);
  }
}

// One small request through `pool`: the reply's status (or the error's code) and body.
asio::awaitable<std::pair<int, std::string>> forward_once(UpstreamPool& pool) {
  UpstreamRequest request;
  request.target = "/v1/systemone";
  request.body = "{}";
  request.deadline = Clock::now() + 5s;
  UpstreamReply reply;
  const auto failed = co_await pool.forward(request, reply);
  co_return std::pair{failed ? static_cast<int>(failed->code) : reply.status, reply.body};
}

// A kept-alive connection the worker closes while it waits in the pool is known closed from its
// pending receive: the next request goes over a fresh connection and succeeds, and the storage the
// caller lends for the reply is reused.
TEST(UpstreamExchange, ConnectionClosedWhileIdleIsReplacedBeforeTheNextRequest) {
  asio::io_context io;
  CannedWorker worker(io);
  UpstreamSettings settings;
  settings.urls = {worker.url()};
  UpstreamPool pool("canned", settings);
  asio::co_spawn(io, worker.serve({{"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n{\"a\":1}", ""}}), asio::detached);
  std::vector<int> statuses;
  std::vector<std::string> bodies;
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    for (int i = 0; i < 2; ++i) {
      if (i == 1) {
        // The worker closed the first connection; the second one serves the next request.
        asio::co_spawn(io, worker.serve({{"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n{\"a\":2}"}}), asio::detached);
        asio::steady_timer pause(co_await asio::this_coro::executor, 50ms);
        co_await pause.async_wait(asio::use_awaitable);
      }
      auto [status, body] = co_await forward_once(pool);
      statuses.push_back(status);
      bodies.push_back(std::move(body));
    }
    io.stop();
  }, asio::detached);
  io.run();
  EXPECT_EQ(statuses, (std::vector<int>{200, 200}));
  EXPECT_EQ(bodies, (std::vector<std::string>{"{\"a\":1}", "{\"a\":2}"}));
  EXPECT_EQ(worker.requests.size(), 2u);
  pool.close_idle_connections();
}

// A worker that closes right after its reply, without saying so: the end arrives with the reply's
// last bytes, in one epoll event, which the reply's read consumes. The pool must not keep that
// connection: the next request goes over a fresh one and succeeds.
TEST(UpstreamExchange, EndArrivingWithTheReplyKeepsTheConnectionOutOfThePool) {
  asio::io_context io;
  tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
  UpstreamSettings settings;
  settings.urls = {"http://127.0.0.1:" + std::to_string(acceptor.local_endpoint().port())};
  UpstreamPool pool("canned", settings);
  size_t served = 0;
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    for (int connection = 0; connection < 2; ++connection) {
      tcp::socket socket = co_await acceptor.async_accept(asio::use_awaitable);
      http::request_parser<http::string_body> parser;
      beast::flat_buffer buffer;
      co_await http::async_read(socket, buffer, parser, asio::use_awaitable);
      ++served;
      // Reply and end in one handler: the router's loop sees both in its next event.
      asio::write(socket, asio::buffer(std::string("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")));
      socket.close();
    }
  }, asio::detached);
  std::vector<int> statuses;
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    for (int i = 0; i < 2; ++i) {
      statuses.push_back((co_await forward_once(pool)).first);
    }
    io.stop();
  }, asio::detached);
  io.run();
  EXPECT_EQ(statuses, (std::vector<int>{200, 200}));
  EXPECT_EQ(served, 2u);
  pool.close_idle_connections();
}

// epoll tells an end that came with the bytes last read, which the read alone cannot; bytes without
// an end are not taken for one.
TEST(SocketIo, PeerEndArrivingWithTheBytesIsReported) {
  asio::io_context io;
  Loopback pair(io);
  if (!report_peer_end(pair.near)) GTEST_SKIP() << "this Asio does not let the router ask epoll for the peer's end";
  run(io, [&]() -> asio::awaitable<void> {
    beast::flat_buffer buffer;
    asio::write(pair.far, asio::buffer(std::string("reply")));
    EXPECT_FALSE(co_await read_some(pair.near, buffer, 1024, Clock::now() + 5s, FirstRead::after_event));
    EXPECT_FALSE(peer_end_reported(pair.near));
    asio::write(pair.far, asio::buffer(std::string(" tail")));
    pair.far.shutdown(tcp::socket::shutdown_send);
    EXPECT_FALSE(co_await read_some(pair.near, buffer, 1024, Clock::now() + 5s, FirstRead::after_event));
    EXPECT_EQ(text(buffer), "reply tail");
    EXPECT_TRUE(peer_end_reported(pair.near));
  });
}

// What the forwarding path does with a pending receive: waits for its completion under the deadline,
// then takes its bytes.
asio::awaitable<error_code> wait_for(PendingReceive& receive, tcp::socket& socket, beast::flat_buffer& buffer,
                                     Clock::time_point deadline) {
  if (!receive.completed()) {
    DeadlineWatch::Scope scope(DeadlineWatch::of(socket.get_executor()), socket, deadline);
    co_await receive.completion();
    if (scope.expired()) co_return beast::error::timeout;
  }
  co_return receive.take(buffer);
}

// The pending receive: what arrives while nobody waits is known (finished) and handed to the next
// wait; a wait keeps its deadline; a socket closed under a pending receive is left safely.
TEST(PendingReceive, LearnsOfBytesAndClosesFromEpollAndHandsThemToTheWait) {
  asio::io_context io;
  Loopback pair(io);
  run(io, [&]() -> asio::awaitable<void> {
    beast::flat_buffer buffer;
    PendingReceive receive;
    receive.start(pair.near, buffer, 1024, FirstRead::after_event);
    EXPECT_FALSE(receive.finished());
    asio::write(pair.far, asio::buffer(std::string("early")));
    asio::steady_timer pause(co_await asio::this_coro::executor, 20ms);
    co_await pause.async_wait(asio::use_awaitable);
    EXPECT_TRUE(receive.finished());  // before anyone waits
    EXPECT_FALSE(co_await wait_for(receive, pair.near, buffer, Clock::now() + 5s));
    EXPECT_EQ(text(buffer), "early");

    receive.start(pair.near, buffer, 1024, FirstRead::after_event);
    asio::steady_timer later(co_await asio::this_coro::executor, 20ms);
    later.async_wait([&](const error_code&) { asio::write(pair.far, asio::buffer(std::string(" late"))); });
    EXPECT_FALSE(co_await wait_for(receive, pair.near, buffer, Clock::now() + 5s));
    EXPECT_EQ(text(buffer), "early late");

    // Bytes and the end arriving together make one epoll event: once a read has taken the bytes,
    // only a receive that tries at once learns of the end.
    receive.start(pair.near, buffer, 4, FirstRead::after_event);
    asio::write(pair.far, asio::buffer(std::string("abc")));
    EXPECT_FALSE(co_await wait_for(receive, pair.near, buffer, Clock::now() + 5s));
    EXPECT_EQ(text(buffer), "early lateabc");

    receive.start(pair.near, buffer, 1024, FirstRead::after_event);
    const Clock::time_point started = Clock::now();
    EXPECT_EQ(co_await wait_for(receive, pair.near, buffer, started + 30ms), beast::error::timeout);
    EXPECT_GE(Clock::now() - started, 30ms);

    receive.start(pair.near, buffer, 1024, FirstRead::after_event);
    asio::write(pair.far, asio::buffer(std::string("xyz")));
    pair.far.shutdown(tcp::socket::shutdown_send);
    pause.expires_after(20ms);
    co_await pause.async_wait(asio::use_awaitable);
    EXPECT_FALSE(co_await wait_for(receive, pair.near, buffer, Clock::now() + 5s));
    receive.start(pair.near, buffer, 1024, FirstRead::at_once);
    EXPECT_TRUE(receive.finished());  // the end, found by the try at start
    EXPECT_EQ(co_await wait_for(receive, pair.near, buffer, Clock::now() + 5s), asio::error::eof);

    // Closed while pending: the aborted receive completes later, reaching only its own state.
    auto doomed = std::make_unique<PendingReceive>();
    tcp::socket other(co_await asio::this_coro::executor);
    other.open(tcp::v4());
    other.non_blocking(true);
    doomed->start(other, buffer, 1024, FirstRead::after_event);
    other.close();
    doomed.reset();
    pause.expires_after(5ms);
    co_await pause.async_wait(asio::use_awaitable);
  });
}

TEST(UpstreamExchange, SlowWorkerMeetsTheDeadline) {
  const Clock::time_point started = Clock::now();
  const auto exchanges = forward_all({{}}, 1, 100ms);
  ASSERT_EQ(exchanges.size(), 1u);
  EXPECT_EQ(exchanges[0].error, api::ErrorCode::deadline_exceeded);
  EXPECT_LT(Clock::now() - started, 2s);
}

}  // namespace
}  // namespace s1::router
