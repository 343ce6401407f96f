#include "cli/bench.h"
#include "cli/compare.h"

#include <gtest/gtest.h>

namespace s1::cli {
namespace {

TEST(ParseWorkloadLine, WrappedWithExpected) {
  WorkloadItem item = parse_workload_line(
      R"({"request":{"state":"s","questions":{"q":{"type":"noul"}}},"expected":{"q":true}})", std::nullopt);
  EXPECT_EQ(item.body, R"({"state":"s","questions":{"q":{"type":"noul"}}})");
  ASSERT_TRUE(item.expected.has_value());
  EXPECT_EQ((*item.expected)["q"], true);
}

TEST(ParseWorkloadLine, BareBodyAndModel) {
  WorkloadItem item = parse_workload_line(R"({"state":"é","questions":{"q":{"type":"noul"}}})", std::string("m-1"));
  EXPECT_EQ(item.body, R"({"state":"é","questions":{"q":{"type":"noul"}},"model":"m-1"})");
  EXPECT_FALSE(item.expected.has_value());
  // A model already in the body is replaced.
  item = parse_workload_line(R"({"request":{"model":"a","state":"s"}})", std::string("b"));
  EXPECT_EQ(item.body, R"({"model":"b","state":"s"})");
}

TEST(ParseWorkloadLine, Rejects) {
  EXPECT_THROW(parse_workload_line("{", std::nullopt), std::invalid_argument);
  EXPECT_THROW(parse_workload_line("[1]", std::nullopt), std::invalid_argument);
  EXPECT_THROW(parse_workload_line(R"({"request":{"state":"s"},"expected":{"q":0.5}})", std::nullopt),
               std::invalid_argument);
}

TEST(CompareCases, FixedSetIsValidJsonAndCarriesTheModel) {
  const std::vector<CompareCase> plain = compare_cases(std::nullopt);
  ASSERT_GE(plain.size(), 9u);
  EXPECT_EQ(plain[0].path, "/health");
  EXPECT_FALSE(plain[0].compare_body);
  size_t invalid = 0;
  for (const CompareCase& test : plain) {
    if (test.method == "GET") continue;
    const nlohmann::json body = nlohmann::json::parse(test.body);  // throws when not JSON
    EXPECT_FALSE(body.contains("model")) << test.name;
    if (test.expected_status == 422) ++invalid;
  }
  EXPECT_EQ(invalid, 1u);
  for (const CompareCase& test : compare_cases(std::string("remote \"x\""))) {
    if (test.method == "GET") continue;
    EXPECT_EQ(nlohmann::json::parse(test.body)["model"], "remote \"x\"") << test.name;
  }
}

}  // namespace
}  // namespace s1::cli
