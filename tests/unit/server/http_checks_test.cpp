#include "server/http_checks.h"

#include <gtest/gtest.h>

#include <boost/beast/http/error.hpp>
#include <string>
#include <vector>

namespace s1::server {
namespace {

TEST(Routes, MatchExactlyAndCaseSensitively) {
  EXPECT_EQ(match_route("/v1/systemone").route, Route::systemone);
  EXPECT_EQ(match_route("/v1/systemone/").route, Route::unknown);
  EXPECT_EQ(match_route("/V1/systemone").route, Route::unknown);
  EXPECT_EQ(match_route("/health").allow, "GET, HEAD");
  EXPECT_EQ(match_route("/v1/decisions").allow, "POST");
  EXPECT_EQ(match_route("/v1/systemone/batch").route, Route::batch);
  EXPECT_EQ(match_route("/v1/systemone/batch").allow, "POST");
  EXPECT_FALSE(method_allowed(Route::batch, "GET"));
  EXPECT_EQ(target_path("/v1/systemone?trace=1"), "/v1/systemone");
  EXPECT_TRUE(method_allowed(Route::health, "HEAD"));
  EXPECT_FALSE(method_allowed(Route::health, "DELETE"));
  EXPECT_FALSE(method_allowed(Route::systemone, "OPTIONS"));
}

TEST(Routes, ModelObjectPathsCarryAPercentEncodedId) {
  EXPECT_EQ(match_route("/v1/models/mock-ramp").route, Route::model);
  EXPECT_EQ(match_route("/v1/models/mock-ramp").allow, "GET, HEAD");
  EXPECT_EQ(match_route("/v1/models/").route, Route::unknown);
  EXPECT_EQ(match_route("/v1/models").route, Route::models);
  EXPECT_EQ(model_id_of("/v1/models/mock-ramp"), "mock-ramp");
  EXPECT_EQ(model_id_of("/v1/models/org%2Fname%20x"), "org/name x");
  EXPECT_EQ(model_id_of("/v1/models/a/b"), "a/b");
  EXPECT_FALSE(model_id_of("/v1/models/bad%2"));
  EXPECT_FALSE(model_id_of("/v1/models/bad%zz"));
  EXPECT_FALSE(model_id_of("/v1/systemone"));
}

TEST(Auth, BearerSchemeIsCaseInsensitiveAndKeysExact) {
  const std::vector<std::string> keys = {"k-test", "other"};
  EXPECT_TRUE(authorized("Bearer k-test", keys));
  EXPECT_TRUE(authorized("bearer other", keys));
  EXPECT_TRUE(authorized("BEARER   k-test ", keys));
  EXPECT_FALSE(authorized("Bearer wrong", keys));
  EXPECT_FALSE(authorized("Bearer k-tes", keys));
  EXPECT_FALSE(authorized("Bearer k-test2", keys));
  EXPECT_FALSE(authorized("Basic azp0ZXN0", keys));
  EXPECT_FALSE(authorized("", keys));
  EXPECT_FALSE(authorized("Bearer ", keys));
}

TEST(ContentType, OnlyJsonWithUtf8Charset) {
  EXPECT_TRUE(acceptable_content_type("application/json"));
  EXPECT_TRUE(acceptable_content_type("Application/JSON; charset=\"UTF-8\""));
  EXPECT_TRUE(acceptable_content_type("application/json;charset=utf-8"));
  EXPECT_FALSE(acceptable_content_type("text/plain"));
  EXPECT_FALSE(acceptable_content_type("text/json"));
  EXPECT_FALSE(acceptable_content_type("application/problem+json"));
  EXPECT_FALSE(acceptable_content_type("application/json; charset=latin-1"));
  EXPECT_FALSE(acceptable_content_type("application/json; boundary=x"));
  EXPECT_FALSE(acceptable_content_type("application/json; charset"));
  EXPECT_FALSE(acceptable_content_type(""));
}

TEST(ContentEncoding, NamesOneServedCodingOrNone) {
  EXPECT_EQ(content_coding(""), ContentCoding::identity);
  EXPECT_EQ(content_coding(" Identity "), ContentCoding::identity);
  EXPECT_EQ(content_coding("gzip"), ContentCoding::gzip);
  EXPECT_EQ(content_coding("DEFLATE"), ContentCoding::deflate);
  EXPECT_EQ(content_coding("zstd"), ContentCoding::zstd);
  EXPECT_EQ(content_coding("gzip, zstd"), std::nullopt);
  EXPECT_EQ(content_coding("br"), std::nullopt);
}

TEST(NulBytes, FoundAnywhere) {
  EXPECT_FALSE(has_nul_byte("{\"a\":1}"));
  EXPECT_TRUE(has_nul_byte(std::string("{}\0x", 4)));
  EXPECT_TRUE(has_nul_byte(std::string("\0", 1)));
}

TEST(Traceparent, ValidOnesGiveTheirTraceId) {
  const std::string valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  EXPECT_EQ(traceparent_trace_id(valid), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(traceparent_trace_id("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra"),
            "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(traceparent_trace_id(valid + "-extra"), std::nullopt);  // version 00 has no more fields
  EXPECT_EQ(traceparent_trace_id("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), std::nullopt);
  EXPECT_EQ(traceparent_trace_id("00-00000000000000000000000000000000-00f067aa0ba902b7-01"), std::nullopt);
  EXPECT_EQ(traceparent_trace_id("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"), std::nullopt);
  EXPECT_EQ(traceparent_trace_id("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"), std::nullopt);
  EXPECT_EQ(traceparent_trace_id("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"), std::nullopt);
}

TEST(Framing, HeadsTheParserAcceptedAreCheckedAgainstTheContract) {
  const auto code = [](const HeadFraming& head) {
    const auto error = framing_error(head);
    return error ? api::http_status(error->code) : 0;
  };
  EXPECT_EQ(code({11, 10, 1, 1, 0, ""}), 0);
  EXPECT_EQ(code({11, 10, 1, 0, 1, "chunked"}), 0);
  EXPECT_EQ(code({11, 10, 1, 0, 1, " Chunked "}), 0);
  EXPECT_EQ(code({11, max_target_bytes + 1, 1, 0, 0, ""}), 414);
  EXPECT_EQ(code({11, 10, 1, 1, 1, "gzip"}), 400);
  EXPECT_EQ(code({11, 10, 1, 0, 1, "gzip"}), 501);
  EXPECT_EQ(code({11, 10, 1, 0, 1, "gzip, chunked"}), 501);
  EXPECT_EQ(code({11, 10, 1, 0, 2, ""}), 501);
  EXPECT_EQ(code({11, 10, 0, 0, 0, ""}), 400);
  EXPECT_EQ(code({11, 10, 2, 0, 0, ""}), 400);
  EXPECT_EQ(code({10, 10, 0, 0, 0, ""}), 0);  // HTTP/1.0 needs no Host
}

TEST(Framing, HeadsTheParserRefusedGetTheirStatus) {
  namespace http = boost::beast::http;
  const auto code = [](http::error error, std::string_view target, bool length, std::string_view unparsed) {
    const auto refusal = head_parse_error(error, target, length, unparsed);
    return refusal ? api::http_status(refusal->code) : 0;
  };
  EXPECT_EQ(code(http::error::header_limit, "", false, "GET /aaaa"), 414);
  EXPECT_EQ(code(http::error::header_limit, "/short", false, "X: y"), 431);
  EXPECT_EQ(code(http::error::bad_version, "", false, "GET / HTTP/2.0\r\n"), 505);
  EXPECT_EQ(code(http::error::bad_version, "", false, "GET / HTTP/1.1\n"), 400);
  EXPECT_EQ(code(http::error::bad_version, "", false, "GET / HTTX/1.1\r\n"), 400);
  EXPECT_EQ(code(http::error::bad_transfer_encoding, "/", true, ""), 400);
  EXPECT_EQ(code(http::error::bad_transfer_encoding, "/", false, ""), 501);
  EXPECT_EQ(code(http::error::bad_content_length, "/", false, ""), 400);
  EXPECT_EQ(code(http::error::bad_method, "", false, ""), 400);
  EXPECT_EQ(code(http::error::end_of_stream, "", false, ""), 0);
  EXPECT_EQ(code(http::error::partial_message, "", false, ""), 0);
}

TEST(RequestId, ValidatesClientIdsAndMintsFreshOnes) {
  EXPECT_TRUE(valid_request_id("abc-123"));
  EXPECT_TRUE(valid_request_id("a.b_c:d+e/f=g"));
  EXPECT_FALSE(valid_request_id(std::string(129, 'a')));
  EXPECT_FALSE(valid_request_id(""));
  EXPECT_FALSE(valid_request_id("a b"));
  std::string fresh = "a longer client id that the fresh one replaces whole";
  assign_fresh_request_id(fresh);
  EXPECT_EQ(fresh.size(), 32U);
  EXPECT_EQ(fresh.find_first_not_of("0123456789abcdef"), std::string::npos);
  std::string next;
  assign_fresh_request_id(next);
  EXPECT_NE(fresh, next);
}

}  // namespace
}  // namespace s1::server
