#include "server/http_checks.h"

#include <gtest/gtest.h>

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
  EXPECT_TRUE(acceptable_content_encoding(""));
  EXPECT_TRUE(acceptable_content_encoding("identity"));
  EXPECT_FALSE(acceptable_content_encoding("gzip"));
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
