#include "cli/bench_stats.h"

#include <gtest/gtest.h>

#include <numeric>

namespace s1::cli {
namespace {

TEST(NearestRankPercentile, KnownValues) {
  // 1..100: the p-th percentile by nearest rank is exactly p.
  std::vector<double> hundred(100);
  std::iota(hundred.begin(), hundred.end(), 1.0);
  EXPECT_EQ(nearest_rank_percentile(hundred, 50), 50.0);
  EXPECT_EQ(nearest_rank_percentile(hundred, 95), 95.0);
  EXPECT_EQ(nearest_rank_percentile(hundred, 99), 99.0);
  EXPECT_EQ(nearest_rank_percentile(hundred, 100), 100.0);
  EXPECT_EQ(nearest_rank_percentile(hundred, 0.5), 1.0);

  // Wikipedia's example: {15, 20, 35, 40, 50}: p30 = 20, p40 = 20, p50 = 35, p100 = 50.
  const std::vector<double> five{15, 20, 35, 40, 50};
  EXPECT_EQ(nearest_rank_percentile(five, 5), 15.0);
  EXPECT_EQ(nearest_rank_percentile(five, 30), 20.0);
  EXPECT_EQ(nearest_rank_percentile(five, 40), 20.0);
  EXPECT_EQ(nearest_rank_percentile(five, 50), 35.0);
  EXPECT_EQ(nearest_rank_percentile(five, 100), 50.0);

  // Never interpolated: with 4 values p50 is the 2nd.
  EXPECT_EQ(nearest_rank_percentile({1, 2, 3, 4}, 50), 2.0);
  // 20 values: p95 is rank 19 exactly (no floating-point overshoot to rank 20).
  std::vector<double> twenty(20);
  std::iota(twenty.begin(), twenty.end(), 1.0);
  EXPECT_EQ(nearest_rank_percentile(twenty, 95), 19.0);
  EXPECT_EQ(nearest_rank_percentile(twenty, 99), 20.0);
  EXPECT_EQ(nearest_rank_percentile({7}, 99), 7.0);
}

TEST(NearestRankPercentile, RejectsBadInput) {
  EXPECT_THROW(nearest_rank_percentile({}, 50), std::invalid_argument);
  EXPECT_THROW(nearest_rank_percentile({1}, 0), std::invalid_argument);
  EXPECT_THROW(nearest_rank_percentile({1}, 101), std::invalid_argument);
}

TEST(SummarizeLatencies, SortsAndSummarizes) {
  const LatencySummary summary = summarize_latencies({40, 10, 30, 20});
  EXPECT_EQ(summary.count, 4u);
  EXPECT_EQ(summary.p50, 20.0);
  EXPECT_EQ(summary.p95, 40.0);
  EXPECT_EQ(summary.p99, 40.0);
  EXPECT_EQ(summary.max, 40.0);
  EXPECT_DOUBLE_EQ(summary.mean, 25.0);
  EXPECT_EQ(summarize_latencies({}).count, 0u);
}

nlohmann::json answers_json() {
  return nlohmann::json::parse(R"({
    "team": {"type":"choice","choice":"billing","confidence":0.5,"probabilities":{"billing":0.7,"technical":0.3}},
    "dup": {"type":"noul","noul":0.5},
    "no": {"type":"noul","noul":0.49},
    "anger": {"type":"score","score":1.25,"confidence":0.3,"legend":{},"probabilities":{}},
    "calm": {"type":"score","score":0.5,"confidence":0.3,"legend":{},"probabilities":{}}
  })");
}

TEST(GradeAnswers, CountsCorrectWrongAndDenominators) {
  const nlohmann::json expected = nlohmann::json::parse(
      R"({"team":"billing","dup":true,"no":true,"anger":2,"calm":0})");
  const QualityTally tally = grade_answers(expected, answers_json());
  EXPECT_EQ(tally.choice_total, 1u);
  EXPECT_EQ(tally.choice_correct, 1u);
  EXPECT_EQ(tally.noul_total, 2u);
  EXPECT_EQ(tally.noul_correct, 1u);  // 0.5 counts as yes; 0.49 as no
  EXPECT_EQ(tally.score_total, 2u);
  EXPECT_EQ(tally.score_answered, 2u);
  EXPECT_DOUBLE_EQ(tally.score_abs_error_sum, 0.75 + 0.5);
}

TEST(GradeAnswers, WrongChoiceAndNoulNo) {
  const nlohmann::json expected = nlohmann::json::parse(R"({"team":"technical","no":false})");
  const QualityTally tally = grade_answers(expected, answers_json());
  EXPECT_EQ(tally.choice_total, 1u);
  EXPECT_EQ(tally.choice_correct, 0u);
  EXPECT_EQ(tally.choice_unanswered, 0u);
  EXPECT_EQ(tally.noul_correct, 1u);
}

TEST(GradeAnswers, FailedRequestCountsAsUnanswered) {
  const nlohmann::json expected = nlohmann::json::parse(R"({"team":"billing","dup":true,"anger":2})");
  const QualityTally failed = grade_answers(expected, std::nullopt);
  EXPECT_EQ(failed.choice_total, 1u);
  EXPECT_EQ(failed.choice_correct, 0u);
  EXPECT_EQ(failed.choice_unanswered, 1u);
  EXPECT_EQ(failed.noul_total, 1u);
  EXPECT_EQ(failed.noul_unanswered, 1u);
  EXPECT_EQ(failed.score_total, 1u);
  EXPECT_EQ(failed.score_answered, 0u);

  // A key that is missing or has the wrong answer type is unanswered too.
  const nlohmann::json mismatched = nlohmann::json::parse(R"({"dup":"billing","missing":true})");
  const QualityTally tally = grade_answers(mismatched, answers_json());
  EXPECT_EQ(tally.choice_unanswered, 1u);
  EXPECT_EQ(tally.noul_unanswered, 1u);
}

TEST(CheckExpectedAnswers, AcceptsOnlyKnownShapes) {
  EXPECT_NO_THROW(check_expected_answers(nlohmann::json::parse(R"({"a":"x","b":true,"c":3})")));
  EXPECT_THROW(check_expected_answers(nlohmann::json::parse(R"({"a":1.5})")), std::invalid_argument);
  EXPECT_THROW(check_expected_answers(nlohmann::json::parse(R"({"a":null})")), std::invalid_argument);
  EXPECT_THROW(check_expected_answers(nlohmann::json::parse(R"([1])")), std::invalid_argument);
}

TEST(BenchTally, CountsEveryOutcomeIncludingFailures) {
  BenchTally first;
  first.record({10, 200, ""});
  first.record({20, 200, ""});
  first.record({30, 503, ""});
  BenchTally second;
  second.record({40, 0, "connect"});
  second.record({50, 0, "timeout"});
  second.record({60, 422, ""});
  second.record({70, 0, "connect"});
  first.merge(second);
  EXPECT_EQ(first.requests(), 7u);
  EXPECT_EQ(first.ok_latencies_ms.size(), 2u);
  EXPECT_EQ(first.statuses.at(200), 2u);
  EXPECT_EQ(first.statuses.at(503), 1u);
  EXPECT_EQ(first.statuses.at(422), 1u);
  EXPECT_EQ(first.connection_errors.at("connect"), 2u);
  EXPECT_EQ(first.connection_errors.at("timeout"), 1u);

  BenchSettings settings;
  settings.url = "http://127.0.0.1:1";
  settings.workload = "w.jsonl";
  settings.concurrency = 2;
  const BenchSummary summary = summarize_bench(settings, first, 2.0);
  EXPECT_EQ(summary.requests, 7u);
  EXPECT_EQ(summary.ok, 2u);
  EXPECT_EQ(summary.errors, 5u);
  EXPECT_DOUBLE_EQ(summary.requests_per_second, 3.5);
  EXPECT_DOUBLE_EQ(summary.ok_per_second, 1.0);
  EXPECT_EQ(summary.latency.p50, 40.0);  // failures stay in the latency distribution
  EXPECT_EQ(summary.latency.max, 70.0);
  EXPECT_EQ(summary.ok_latency.p50, 10.0);

  const std::string text = format_bench_summary(summary);
  EXPECT_NE(text.find("nearest-rank"), std::string::npos);
  EXPECT_NE(text.find("errors       5 of 7 (non-200 responses 2, connection errors 3, connect 2, timeout 1)"),
            std::string::npos)
      << text;

  const nlohmann::ordered_json json = bench_summary_to_json(summary);
  EXPECT_EQ(json["percentile_method"], "nearest-rank");
  EXPECT_EQ(json["requests"], 7);
  EXPECT_EQ(json["errors"], 5);
  EXPECT_EQ(json["statuses"]["503"], 1);
  EXPECT_EQ(json["connection_errors"]["connect"], 2);
  EXPECT_EQ(json["latency_ms"]["p99"], 70.0);
}

TEST(BenchSummary, QualityWithDenominators) {
  BenchTally tally;
  tally.record({5, 200, ""});
  tally.quality.choice_total = 4;
  tally.quality.choice_correct = 3;
  tally.quality.choice_unanswered = 1;
  tally.quality.noul_total = 2;
  tally.quality.noul_correct = 2;
  tally.quality.score_total = 3;
  tally.quality.score_answered = 2;
  tally.quality.score_abs_error_sum = 1.0;
  const BenchSummary summary = summarize_bench(BenchSettings{}, tally, 1.0);
  const std::string text = format_bench_summary(summary);
  EXPECT_NE(text.find("choice accuracy  3/4 = 75.00% (1 unanswered)"), std::string::npos) << text;
  EXPECT_NE(text.find("noul accuracy    2/2 = 100.00%"), std::string::npos) << text;
  EXPECT_NE(text.find("score MAE        0.5000 over 2 answered score questions (of 3)"), std::string::npos) << text;
  const nlohmann::ordered_json json = bench_summary_to_json(summary);
  EXPECT_DOUBLE_EQ(json["quality"]["choice"]["accuracy"].get<double>(), 0.75);
  EXPECT_EQ(json["quality"]["choice"]["total"], 4);
  EXPECT_DOUBLE_EQ(json["quality"]["score"]["mae"].get<double>(), 0.5);
  EXPECT_EQ(json["quality"]["score"]["answered"], 2);
}

TEST(BenchSummary, NoQualitySectionWithoutLabels) {
  BenchTally tally;
  tally.record({5, 200, ""});
  const std::string text = format_bench_summary(summarize_bench(BenchSettings{}, tally, 1.0));
  EXPECT_EQ(text.find("accuracy"), std::string::npos);
  EXPECT_TRUE(bench_summary_to_json(summarize_bench(BenchSettings{}, tally, 1.0))["quality"].empty());
}

}  // namespace
}  // namespace s1::cli
