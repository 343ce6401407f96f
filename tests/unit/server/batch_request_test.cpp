#include "server/batch_request.h"

#include <gtest/gtest.h>

#include <string>

namespace s1::server {
namespace {

const api::RequestLimits limits{64, false};

std::string item(const std::string& state) {
  return R"({"model":"m","state":")" + state + R"(","questions":{"q":{"type":"noul","instructions":"Refund?"}}})";
}

std::string batch_of(size_t count) {
  std::string body = R"({"requests":[)";
  for (size_t i = 0; i < count; ++i) body += (i ? "," : "") + item("s" + std::to_string(i));
  return body + "]}";
}

std::string first_issue_type(const api::Result<std::vector<BatchItem>>& parsed) {
  if (parsed) return "accepted";
  if (parsed.error().code != api::ErrorCode::validation) return "not a validation error";
  return parsed.error().issues.front().type;
}

TEST(BatchRequest, EveryItemIsValidatedOnItsOwnAndKeptInOrder) {
  const auto parsed =
      parse_batch_request(R"({"requests":[)" + item("first") + R"(,{"state":"x"},7,)" + item("last") + "]}", limits);
  ASSERT_TRUE(parsed);
  const auto& items = parsed.value();
  ASSERT_EQ(items.size(), 4U);
  ASSERT_TRUE(items[0].request);
  EXPECT_EQ(items[0].request.value().state, "first");
  ASSERT_FALSE(items[1].request);
  EXPECT_EQ(items[1].request.error().code, api::ErrorCode::validation);
  EXPECT_EQ(items[1].request.error().issues.size(), 2U);  // model and questions missing
  ASSERT_FALSE(items[2].request);
  EXPECT_EQ(items[2].request.error().issues.front().type, "dict_type");
  ASSERT_TRUE(items[3].request);
  EXPECT_EQ(items[3].body["state"], "last");
}

TEST(BatchRequest, FromOneTo256Items) {
  EXPECT_EQ(first_issue_type(parse_batch_request(batch_of(1), limits)), "accepted");
  EXPECT_EQ(first_issue_type(parse_batch_request(batch_of(max_batch_items), limits)), "accepted");
  EXPECT_EQ(first_issue_type(parse_batch_request(batch_of(max_batch_items + 1), limits)), "too_long");
  EXPECT_EQ(first_issue_type(parse_batch_request(batch_of(0), limits)), "too_short");
}

TEST(BatchRequest, ABodyThatIsNotSuchAnObjectIsOne422) {
  EXPECT_EQ(first_issue_type(parse_batch_request(R"([)" + item("s") + "]", limits)), "dict_type");
  EXPECT_EQ(first_issue_type(parse_batch_request("{}", limits)), "missing");
  EXPECT_EQ(first_issue_type(parse_batch_request(R"({"requests":{}})", limits)), "list_type");
  EXPECT_EQ(first_issue_type(parse_batch_request(batch_of(1) + " x", limits)), "json_invalid");
  const auto extra = parse_batch_request(R"({"requests":[)" + item("s") + R"(],"model":"m"})", limits);
  ASSERT_FALSE(extra);
  EXPECT_EQ(extra.error().issues.front().type, "extra_forbidden");
  EXPECT_EQ(std::get<std::string>(extra.error().issues.front().location.front()), "model");
}

}  // namespace
}  // namespace s1::server
