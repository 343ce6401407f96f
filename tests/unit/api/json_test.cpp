#include "api/json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace s1::api {
namespace {

bool parses(std::string_view text) { return std::holds_alternative<Json>(parse_strict_json(text)); }

std::string parse_error(std::string_view text) {
  const auto result = parse_strict_json(text);
  return std::holds_alternative<JsonSyntaxError>(result) ? std::get<JsonSyntaxError>(result).message : "";
}

TEST(StrictJson, AcceptsOrdinaryDocumentsAndKeepsMemberOrder) {
  const auto result = parse_strict_json(R"({"z":1,"a":[true,null,2.5,"x"],"m":{"b":1,"a":2}})");
  ASSERT_TRUE(std::holds_alternative<Json>(result));
  const Json& value = std::get<Json>(result);
  std::string out;
  append_json(out, value);
  EXPECT_EQ(out, R"({"z":1,"a":[true,null,2.5,"x"],"m":{"b":1,"a":2}})");
}

TEST(StrictJson, RefusesEveryContractViolation) {
  EXPECT_NE(parse_error(R"({"a":1,"a":2})"), "");
  EXPECT_NE(parse_error(R"({"a":1,"\u0061":2})"), "");
  EXPECT_NE(parse_error(R"({"x":{"a":1,"a":2}})"), "");
  EXPECT_NE(parse_error("{\"a\":\"\xff\"}"), "");
  EXPECT_NE(parse_error("{\"a\":\"\xc0\xaf\"}"), "");      // overlong '/'
  EXPECT_NE(parse_error("{\"a\":\"\xed\xa0\x80\"}"), "");  // encoded surrogate
  EXPECT_NE(parse_error(R"({"a":"\ud800"})"), "");
  EXPECT_NE(parse_error(R"({"a":"\udc00"})"), "");
  EXPECT_NE(parse_error(R"({"a":NaN})"), "");
  EXPECT_NE(parse_error(R"({"a":-Infinity})"), "");
  EXPECT_NE(parse_error(R"({"a":1e400})"), "");
  EXPECT_NE(parse_error(R"({"a":1} x)"), "");
  EXPECT_NE(parse_error(R"({}{})"), "");
  EXPECT_NE(parse_error(""), "");
  EXPECT_NE(parse_error("   "), "");
  EXPECT_NE(parse_error("\xef\xbb\xbf{}"), "");
  EXPECT_NE(parse_error(R"({"a":1)"), "");
  EXPECT_NE(parse_error("{\"a\":\"tab\there\"}"), "");
}

TEST(StrictJson, AcceptsUnderflowAndDistinctNormalisationForms) {
  EXPECT_TRUE(parses(R"({"a":1e-400})"));
  EXPECT_TRUE(parses("{\"\xc3\xa9\":1,\"e\xcc\x81\":2}"));
  EXPECT_TRUE(parses(R"({"a":"\ud83d\ude00"})"));
}

TEST(StrictJson, LimitsDepthTo64) {
  // The top-level object is depth 1; 63 nested arrays inside it make depth 64.
  std::string ok = "{\"s\":" + std::string(63, '[') + std::string(63, ']') + "}";
  std::string deep = "{\"s\":" + std::string(64, '[') + std::string(64, ']') + "}";
  EXPECT_TRUE(parses(ok));
  EXPECT_NE(parse_error(deep), "");
  // Far deeper input fails cleanly instead of exhausting the stack.
  EXPECT_NE(parse_error(std::string(1'000'000, '[')), "");
}

TEST(StrictJson, ErrorMessagesNeverEchoInput) {
  const std::string message = parse_error(R"({"secret-value-123": nope})");
  EXPECT_EQ(message.find("secret"), std::string::npos);
  EXPECT_EQ(message.find("nope"), std::string::npos);
}

TEST(JsonWriter, DoublesAreShortestRoundTripWithPointOrExponent) {
  auto write = [](double value) {
    std::string out;
    append_json_double(out, value);
    return out;
  };
  EXPECT_EQ(write(1.0), "1.0");
  EXPECT_EQ(write(0.0), "0.0");
  EXPECT_EQ(write(-0.0), "0.0");
  EXPECT_EQ(write(0.7310585786300049), "0.7310585786300049");
  EXPECT_EQ(write(3.0903061910401934e-111), "3.0903061910401934e-111");
  EXPECT_EQ(write(1e20), "1e+20");
  EXPECT_EQ(write(0.25), "0.25");
}

TEST(JsonWriter, EscapesControlCharactersAndKeepsNonAscii) {
  std::string out;
  append_json_string(out, "a\"b\\c\nd\x01\x7f\xc2\x85\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(out, "\"a\\\"b\\\\c\\nd\\u0001\\u007f\\u0085\xc3\xa9\xf0\x9f\x98\x80\"");
}

TEST(JsonWriter, IntegersStayIntegers) {
  std::string out;
  append_json(out, Json::parse(R"([1,-5,18446744073709551615,2.0,1e300])"));
  EXPECT_EQ(out, "[1,-5,18446744073709551615,2.0,1e+300]");
}

TEST(Unicode, CountsCodePointsAndFindsControlCharacters) {
  EXPECT_EQ(count_code_points("\xc3\xa9t\xc3\xa9"), 3U);
  EXPECT_EQ(count_code_points("\xf0\x9f\x98\x80"), 1U);
  EXPECT_TRUE(has_control_character("a\tb"));
  EXPECT_TRUE(has_control_character("a\xc2\x9f"));
  EXPECT_FALSE(has_control_character("caf\xc3\xa9 \xc2\xa0"));
}

}  // namespace
}  // namespace s1::api
