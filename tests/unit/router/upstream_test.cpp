#include "router/decisions_relay.h"
#include "router/upstream_pool.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace s1::router {
namespace {

// Why parse_upstream_url refused `url`; empty when it accepted it.
std::string refusal(const std::string& url) {
  try {
    parse_upstream_url(url);
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return {};
}

TEST(UpstreamUrl, ParsesHostPortAndBase) {
  const ParsedUrl plain = parse_upstream_url("http://127.0.0.1:8081");
  EXPECT_EQ(plain.host, "127.0.0.1");
  EXPECT_EQ(plain.port, "8081");
  EXPECT_EQ(plain.base_path, "");
  const ParsedUrl based = parse_upstream_url("http://worker/api/");
  EXPECT_EQ(based.port, "80");
  EXPECT_EQ(based.base_path, "/api");
  const ParsedUrl v6 = parse_upstream_url("http://[::1]:9000/x");
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.port, "9000");
  EXPECT_THROW(parse_upstream_url("https://x"), std::invalid_argument);
  EXPECT_THROW(parse_upstream_url("http://:80"), std::invalid_argument);
  EXPECT_THROW(parse_upstream_url("http://host:8o"), std::invalid_argument);
}

TEST(UpstreamUrl, RefusesCredentialsWithoutShowingThem) {
  for (const char* url : {"http://user:s3cret@worker:8000", "http://s3cret@worker", "http://worker:8000/v1?key=s3cret",
                          "http://worker/#s3cret", "https://user:s3cret@worker/?s3cret"}) {
    const std::string message = refusal(url);
    EXPECT_NE(message.find("worker"), std::string::npos) << url << ": " << message;
    EXPECT_EQ(message.find("s3cret"), std::string::npos) << message;
  }
  EXPECT_NE(refusal("http://user:s3cret@worker:8000/a").find("'http://***@worker:8000/a' has user-info"),
            std::string::npos);
  EXPECT_NE(refusal("http://worker:8000/a?key=s3cret").find("'http://worker:8000/a?***' has a query"),
            std::string::npos);
  EXPECT_NE(refusal(std::string("http://wor\0ker", 14)).find("'http://wor_ker' has a space or a control"),
            std::string::npos);
  EXPECT_NE(refusal("http://wor ker").find("has a space"), std::string::npos);
}

TEST(UpstreamUrl, ShownUrl) {
  EXPECT_EQ(shown_url("http://worker:8000/base"), "http://worker:8000/base");
  EXPECT_EQ(shown_url("http://a:b@c@worker/x?y#z"), "http://***@worker/x?***");
  EXPECT_EQ(shown_url("http://worker/p@th"), "http://worker/p@th");  // an @ in the path is no user-info
  EXPECT_EQ(shown_url("user:pass@worker"), "***@worker");
  EXPECT_EQ(shown_url("http://worker#frag"), "http://worker#***");
  EXPECT_EQ(shown_url(std::string("http://wor\0ker\n", 15)), "http://wor_ker_");  // a NUL would cut a message
}

TEST(UpstreamPool, HopByHopHeaders) {
  for (const char* name : {"Connection", "keep-alive", "Proxy-Authorization", "TE", "Trailer", "Transfer-Encoding", "Upgrade"}) {
    EXPECT_TRUE(UpstreamPool::is_hop_by_hop(name)) << name;
  }
  EXPECT_TRUE(UpstreamPool::is_hop_by_hop("PROXY-CONNECTION"));
  EXPECT_FALSE(UpstreamPool::is_hop_by_hop("proxy"));
  EXPECT_FALSE(UpstreamPool::is_hop_by_hop("tee"));
  EXPECT_FALSE(UpstreamPool::is_hop_by_hop(""));
  EXPECT_FALSE(UpstreamPool::is_hop_by_hop("Content-Type"));
  EXPECT_FALSE(UpstreamPool::is_hop_by_hop("x-request-id"));
  for (const char* near_miss : {"Connectiox", "keep_alive", "trailer2", "Upgraded", "transfer-encodinx", "T3"}) {
    EXPECT_FALSE(UpstreamPool::is_hop_by_hop(near_miss)) << near_miss;
  }
}

TEST(UpstreamPool, RefusesAPoolWithoutReplicas) {
  EXPECT_THROW(UpstreamPool("remote", UpstreamSettings{}), std::invalid_argument);
  UpstreamSettings settings;
  settings.urls = {"http://127.0.0.1:1", "http://127.0.0.1:2"};
  UpstreamPool pool("remote", settings);
  EXPECT_EQ(pool.upstream_model(), "remote");
  EXPECT_EQ(pool.replica_count(), 2U);
  EXPECT_EQ(pool.healthy_count(), 2U);  // not yet polled counts as healthy
}

api::DecisionsRequest example_request() {
  auto parsed = api::parse_decisions_request(
      R"({"input":"x","questions":[{"type":"choice","instructions":"","choices":[{"value":"a"},{"value":true}]},
                                   {"type":"predicate","instructions":"p"},
                                   {"type":"score","instructions":"s","levels":[{"label":"lo"},{"label":"hi"}]}]})",
      api::RequestLimits{64, true});
  return parsed.value();
}

TEST(DecisionsRelay, MapsAWorkerAnswerBack) {
  const auto request = example_request();
  const std::string worker = R"({"model":"w","answers":{
    "0":{"type":"choice","choice":"true","confidence":0.5,"probabilities":{"a":0.25,"true":0.75}},
    "1":{"type":"noul","noul":0.9},
    "2":{"type":"score","score":0.5,"confidence":0.0,"legend":{"0":"lo","1":"hi"},"probabilities":{"0":0.5,"1":0.5}}},
    "usage":{"input_tokens":7,"output_tokens":0}})";
  auto result = decisions_result_from_worker(request, worker, "remote");
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->input_tokens, 7);
  EXPECT_EQ(result->answers[0].choice_index, 1U);
  EXPECT_DOUBLE_EQ(result->answers[1].probabilities[0], 0.9);
  EXPECT_DOUBLE_EQ(result->answers[2].score, 0.5);
  const std::string body = api::serialize_decisions_response(request, result.value());
  EXPECT_NE(body.find(R"("choice":true,)"), std::string::npos);
}

TEST(DecisionsRelay, RefusesAnswersThatDoNotMatch) {
  const auto request = example_request();
  EXPECT_FALSE(decisions_result_from_worker(request, "not json", "r").ok());
  EXPECT_FALSE(decisions_result_from_worker(request, R"({"answers":{"0":{}}})", "r").ok());
  const std::string missing_option = R"({"answers":{
    "0":{"choice":"a","confidence":0.5,"probabilities":{"a":1.0}},
    "1":{"noul":0.9},"2":{"score":0.5,"confidence":0.0,"probabilities":{"0":0.5,"1":0.5}}}})";
  const auto refused = decisions_result_from_worker(request, missing_option, "r");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, api::ErrorCode::upstream_bad_response);
}

TEST(DecisionsRelay, RewrapsWorkerErrors) {
  EXPECT_EQ(openai_error_from_worker(400, R"({"detail":{"error_type":"too_many_options","message":"Too many"}})"),
            R"({"error":{"message":"Too many","type":"invalid_request_error","param":null,"code":"too_many_options"}})");
  EXPECT_EQ(openai_error_from_worker(422, R"({"detail":[{"type":"missing","loc":["body"],"msg":"Field required"}]})"),
            R"({"error":{"message":"Field required","type":"invalid_request_error","param":null,"code":"missing"}})");
  EXPECT_EQ(openai_error_from_worker(503, "oops"),
            R"({"error":{"message":"The worker refused the request","type":"server_error","param":null,"code":"upstream_error"}})");
}

}  // namespace
}  // namespace s1::router
