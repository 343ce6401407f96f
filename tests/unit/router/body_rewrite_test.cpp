#include "router/body_rewrite.h"

#include <gtest/gtest.h>

namespace s1::router {
namespace {

TEST(BodyRewrite, FindsTopLevelMembersOnly) {
  const std::string body = R"( { "state" : {"model":"inner"}, "model" : "remote" , "questions":{}} )";
  const auto span = find_top_level_member(body, "model");
  ASSERT_TRUE(span.has_value());
  EXPECT_EQ(body.substr(span->value_begin, span->value_end - span->value_begin), "\"remote\"");
  EXPECT_FALSE(find_top_level_member(R"({"state":{"model":"x"}})", "model").has_value());
  EXPECT_FALSE(find_top_level_member(R"(["model"])", "model").has_value());
}

TEST(BodyRewrite, ComparesNamesAfterUnescaping) {
  const std::string body = R"({"\u006dodel":"remote","s":"a\"b"})";
  const auto span = find_top_level_member(body, "model");
  ASSERT_TRUE(span.has_value());
  EXPECT_EQ(body.substr(span->value_begin, span->value_end - span->value_begin), "\"remote\"");
}

TEST(BodyRewrite, ReplacesOnlyTheModelValue) {
  EXPECT_EQ(with_model(R"({"model" : "remote" , "state":"x\"y"})", "stub-1"), R"({"model" : "stub-1" , "state":"x\"y"})");
  EXPECT_EQ(with_model(R"({"state":[1,{"a":"]"}],"model":null})", "w"), R"({"state":[1,{"a":"]"}],"model":"w"})");
  EXPECT_EQ(with_model(R"({"state":"x","model":"a","q":1})", "w\"x"), R"({"state":"x","model":"w\"x","q":1})");
}

TEST(BodyRewrite, InsertsTheModelWhenAbsent) {
  EXPECT_EQ(with_model(R"(  {"state":"x"})", "stub-1"), R"(  {"model":"stub-1","state":"x"})");
  EXPECT_EQ(with_model("{ }", "m"), R"({"model":"m" })");
}

}  // namespace
}  // namespace s1::router
