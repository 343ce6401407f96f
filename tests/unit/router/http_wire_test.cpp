#include "router/http_wire.h"

#include <boost/beast/http.hpp>
#include <gtest/gtest.h>

#include <sstream>

namespace s1::router {
namespace {

namespace http = boost::beast::http;

// What Beast's serializer wrote for a reply before the prepared heads: the reference bytes.
std::string beast_response(const ResponseHead& head, const std::string& body, bool head_only) {
  http::response<http::string_body> response{static_cast<http::status>(head.status), head.version};
  if (!head.content_type.empty()) response.set(http::field::content_type, head.content_type);
  response.set("x-request-id", head.request_id);
  for (const auto& [name, value] : head.headers) response.set(name, value);
  response.keep_alive(head.keep_alive);
  response.body() = body;
  response.prepare_payload();
  std::ostringstream out;
  if (head_only) {
    out << response.base();
  } else {
    out << response;
  }
  return out.str();
}

std::string prepared_response(ResponseHead head, const std::string& body, bool head_only) {
  head.content_length = body.size();
  std::string out;
  append_response_head(out, head);
  if (!head_only && response_has_body(head.status)) out += body;
  return out;
}

TEST(HttpWire, ResponseHeadsAreBeastsBytes) {
  const std::vector<std::vector<api::Header>> header_sets = {
      {},
      {{"Server-Timing", "upstream;dur=0.120"}},
      {{"Retry-After", "1"}, {"Allow", "POST"}},
      {{"x-request-id", "from-the-worker"}, {"Vary", "a"}},
      {{"vary", "a"}, {"Cache-Control", "no-store"}, {"Vary", "b"}},
      {{"content-type", "text/plain"}},
  };
  int checked = 0;
  // 204 and 304 differ on purpose: Beast 1.74 wrote "Content-Length: 0" (and threw on a body).
  for (const int status : {200, 400, 401, 404, 413, 422, 429, 499, 502, 503, 504, 299}) {
    for (const unsigned version : {10u, 11u}) {
      for (const bool keep_alive : {true, false}) {
        for (const std::string content_type : {"application/json", ""}) {
          for (const auto& headers : header_sets) {
            for (const bool head_only : {false, true}) {
              const std::string body = R"({"answers":{}})";
              const ResponseHead head{status, version, content_type, "req-1", headers, keep_alive, 0};
              ASSERT_EQ(prepared_response(head, body, head_only), beast_response(head, body, head_only))
                  << "status " << status << " version " << version << " keep-alive " << keep_alive;
              ++checked;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 12 * 2 * 2 * 2 * 6 * 2);
}

TEST(HttpWire, ResponseHeadExample) {
  const std::vector<api::Header> headers = {{"Server-Timing", "upstream;dur=0.120"}};
  std::string out;
  append_response_head(out, ResponseHead{502, 11, "application/json", "abc", headers, false, 12});
  EXPECT_EQ(out,
            "HTTP/1.1 502 Bad Gateway\r\nContent-Type: application/json\r\nx-request-id: abc\r\n"
            "Server-Timing: upstream;dur=0.120\r\nConnection: close\r\nContent-Length: 12\r\n\r\n");
  out.clear();
  append_response_head(out, ResponseHead{204, 10, "", "abc", {}, true, 0});
  EXPECT_EQ(out, "HTTP/1.0 204 No Content\r\nx-request-id: abc\r\nConnection: keep-alive\r\n\r\n");
}

// RFC 9110 §8.6: no Content-Length in a 1xx or 204 reply; a 304's would have to be the
// representation's, which the router does not know. None of them has a body.
TEST(HttpWire, NoContentAndNotModifiedHaveNeitherBodyNorLength) {
  for (const int status : {100, 204, 304}) {
    EXPECT_FALSE(response_has_body(status));
    std::string out;
    append_response_head(out, ResponseHead{status, 11, "application/json", "abc", {}, true, 0});
    EXPECT_EQ(out.find("Content-Length"), std::string::npos) << out;
    EXPECT_TRUE(out.ends_with("x-request-id: abc\r\n\r\n")) << out;
  }
  EXPECT_TRUE(response_has_body(200));
  EXPECT_TRUE(response_has_body(404));
}

// An `overload_status: 529` refusal must not go out as "529 <unknown-status>".
TEST(HttpWire, TheOverloadStatusHasAReasonPhrase) {
  std::string out;
  append_response_head(out, ResponseHead{529, 11, "application/json", "abc", {}, true, 0});
  EXPECT_TRUE(out.starts_with("HTTP/1.1 529 Overloaded\r\n")) << out;
  EXPECT_EQ(reason_phrase(503), "Service Unavailable");
}

TEST(HttpWire, RequestHeadsAreBeastsBytes) {
  const std::vector<std::vector<api::Header>> header_sets = {
      {},
      {{"Content-Type", "application/json"}, {"X-Trace", "1"}, {"x-trace", "2"}},
      {{"Host", "client.example"}, {"authorization", "Bearer client-key"}, {"x-request-id", "client"},
       {"content-length", "99"}, {"Accept", "*/*"}},
  };
  for (const auto& headers : header_sets) {
    for (const std::string credential : {"", "up-key"}) {
      const std::string body = R"({"model":"m","questions":{}})";
      const RequestHead head{"/base/v1/systemone?trace=1", "127.0.0.1:8081", headers, "req-7", credential, body.size()};
      http::request<http::string_body> request{http::verb::post, std::string(head.target), 11};
      for (const auto& [name, value] : headers) request.insert(name, value);
      request.set(http::field::host, head.host);
      request.set("x-request-id", head.request_id);
      if (!credential.empty()) request.set(http::field::authorization, "Bearer " + credential);
      request.keep_alive(true);
      request.body() = body;
      request.prepare_payload();
      std::ostringstream expected;
      expected << request;
      std::string prepared;
      append_request_head(prepared, head);
      EXPECT_EQ(prepared + body, expected.str()) << "credential '" << credential << "'";
    }
  }
}

TEST(HttpWire, RequestHeadExample) {
  const std::vector<api::Header> headers = {{"Content-Type", "application/json"}};
  std::string out;
  append_request_head(out, RequestHead{"/v1/systemone", "w:80", headers, "id", "k", 2});
  EXPECT_EQ(out,
            "POST /v1/systemone HTTP/1.1\r\nContent-Type: application/json\r\nHost: w:80\r\nx-request-id: id\r\n"
            "Authorization: Bearer k\r\nContent-Length: 2\r\n\r\n");
}

}  // namespace
}  // namespace s1::router
