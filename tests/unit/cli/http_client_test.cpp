#include "cli/http_client.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>

#include <gtest/gtest.h>

#include <functional>
#include <thread>

namespace s1::cli {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

TEST(ParseUrl, Forms) {
  Url url = parse_url("http://127.0.0.1:8080");
  EXPECT_EQ(url.host, "127.0.0.1");
  EXPECT_EQ(url.port, "8080");
  EXPECT_EQ(url.base_path, "");
  EXPECT_EQ(url.to_string(), "http://127.0.0.1:8080");

  url = parse_url("HTTP://localhost:9000/prefix/v2/");
  EXPECT_EQ(url.host, "localhost");
  EXPECT_EQ(url.base_path, "/prefix/v2");

  url = parse_url("http://example.com");
  EXPECT_EQ(url.port, "80");

  url = parse_url("http://[::1]:8081/x");
  EXPECT_EQ(url.host, "::1");
  EXPECT_EQ(url.port, "8081");
  EXPECT_EQ(url.to_string(), "http://[::1]:8081/x");
}

TEST(ParseUrl, Rejects) {
  EXPECT_THROW(parse_url("https://h:1"), std::invalid_argument);
  EXPECT_THROW(parse_url("h:1"), std::invalid_argument);
  EXPECT_THROW(parse_url("http://:80"), std::invalid_argument);
  EXPECT_THROW(parse_url("http://h:0"), std::invalid_argument);
  EXPECT_THROW(parse_url("http://h:65536"), std::invalid_argument);
  EXPECT_THROW(parse_url("http://h:12ab"), std::invalid_argument);
  EXPECT_THROW(parse_url("http://user:key@h:1"), std::invalid_argument);
  EXPECT_THROW(parse_url("http://h:1/x?y=1"), std::invalid_argument);
  EXPECT_THROW(parse_url("http://[::1:80"), std::invalid_argument);
}

// A one-thread scripted server: for each accepted connection, reads requests (headers + the
// Content-Length body) and answers each with the next scripted reply; an empty reply closes the
// connection instead of answering.
class ScriptedServer {
 public:
  explicit ScriptedServer(std::vector<std::vector<std::string>> connections)
      : acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)), script_(std::move(connections)) {
    thread_ = std::thread([this] { serve(); });
  }
  ~ScriptedServer() {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()); }
  const std::vector<std::string>& requests() const { return requests_; }

 private:
  void serve() {
    for (const std::vector<std::string>& replies : script_) {
      boost::system::error_code error;
      tcp::socket socket(io_);
      acceptor_.accept(socket, error);
      if (error) return;
      asio::streambuf buffer;
      for (const std::string& reply : replies) {
        const size_t header_end = asio::read_until(socket, buffer, "\r\n\r\n", error);
        if (error) break;
        std::string head(asio::buffers_begin(buffer.data()), asio::buffers_begin(buffer.data()) + header_end);
        buffer.consume(header_end);
        size_t length = 0;
        if (auto at = head.find("Content-Length: "); at != std::string::npos) length = std::stoul(head.substr(at + 16));
        if (buffer.size() < length) asio::read(socket, buffer, asio::transfer_exactly(length - buffer.size()), error);
        std::string body(asio::buffers_begin(buffer.data()), asio::buffers_begin(buffer.data()) + length);
        buffer.consume(length);
        requests_.push_back(head + body);
        if (reply.empty()) break;
        if (reply == "SLEEP") {
          std::this_thread::sleep_for(std::chrono::milliseconds(600));
          break;
        }
        asio::write(socket, asio::buffer(reply), error);
      }
    }
  }

  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::vector<std::vector<std::string>> script_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

const std::string kContentLengthReply =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Request-Id: abc\r\nContent-Length: 7\r\n\r\n{\"a\":1}";
const std::string kChunkedReply =
    "HTTP/1.1 422 Unprocessable Entity\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    "4\r\n{\"de\r\n6\r\ntail\":\r\n2\r\n1}\r\n0\r\n\r\n";

TEST(HttpClient, KeepAliveContentLengthAndChunked) {
  ScriptedServer server({{kContentLengthReply, kChunkedReply}});
  HttpClient client(parse_url(server.url() + "/base"));
  HttpResponse first = client.request("POST", "/v1/systemone", R"({"x":1})", {{"x-request-id", "r1"}});
  EXPECT_EQ(first.status, 200);
  EXPECT_EQ(first.body, R"({"a":1})");
  EXPECT_EQ(first.header("content-type"), "application/json");
  EXPECT_EQ(first.header("x-request-id"), "abc");
  EXPECT_EQ(first.header("missing"), std::nullopt);
  HttpResponse second = client.request("GET", "/health");
  EXPECT_EQ(second.status, 422);
  EXPECT_EQ(second.body, R"({"detail":1})");

  ASSERT_EQ(server.requests().size(), 2u);  // both on the one connection
  EXPECT_NE(server.requests()[0].find("POST /base/v1/systemone HTTP/1.1\r\n"), std::string::npos);
  EXPECT_NE(server.requests()[0].find("Content-Type: application/json\r\n"), std::string::npos);
  EXPECT_NE(server.requests()[0].find("x-request-id: r1\r\n"), std::string::npos);
  EXPECT_NE(server.requests()[0].find("\r\n\r\n{\"x\":1}"), std::string::npos);
  EXPECT_NE(server.requests()[1].find("GET /base/health HTTP/1.1\r\n"), std::string::npos);
}

TEST(HttpClient, RetriesOnceWhenTheIdleConnectionWasClosed) {
  // Connection 1 answers once and then closes without answering the second request; the client
  // resends it on connection 2.
  ScriptedServer server({{kContentLengthReply, ""}, {kContentLengthReply}});
  HttpClient client(parse_url(server.url()));
  EXPECT_EQ(client.request("GET", "/health").status, 200);
  EXPECT_EQ(client.request("GET", "/health").status, 200);
  EXPECT_EQ(server.requests().size(), 3u);
}

TEST(HttpClient, FreshConnectionClosedIsAnError) {
  ScriptedServer server({{""}});
  HttpClient client(parse_url(server.url()));
  try {
    client.request("GET", "/health");
    FAIL() << "expected an HttpError";
  } catch (const HttpError& error) {
    EXPECT_EQ(error.kind(), HttpError::Kind::io);
  }
}

TEST(HttpClient, ReadTimeout) {
  ScriptedServer server({{"SLEEP"}});
  HttpClientOptions options;
  options.read_timeout = std::chrono::milliseconds(100);
  HttpClient client(parse_url(server.url()), options);
  try {
    client.request("GET", "/health");
    FAIL() << "expected an HttpError";
  } catch (const HttpError& error) {
    EXPECT_EQ(error.kind(), HttpError::Kind::timeout);
  }
}

TEST(HttpClient, ConnectRefused) {
  std::string url;
  {
    asio::io_context io;
    tcp::acceptor probe(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    url = "http://127.0.0.1:" + std::to_string(probe.local_endpoint().port());
  }  // closed: nothing listens there now
  HttpClient client(parse_url(url));
  try {
    client.request("GET", "/health");
    FAIL() << "expected an HttpError";
  } catch (const HttpError& error) {
    EXPECT_EQ(error.kind(), HttpError::Kind::connect);
  }
}

}  // namespace
}  // namespace s1::cli
