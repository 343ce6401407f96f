#pragma once

// Statistics for `s1serve bench`: latency percentiles (nearest-rank), throughput, errors by
// status, and answer quality against a workload's expected answers. Every measured request is
// recorded, failures included; warm-up requests never reach a tally.

#include <nlohmann/json.hpp>

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace s1::cli {

// Nearest-rank percentile of ascending `sorted` (non-empty): the value at rank ceil(p/100 · n),
// 1-based, with p in (0, 100]. Always one of the observed values; never interpolated.
double nearest_rank_percentile(const std::vector<double>& sorted, double percent);

struct LatencySummary {
  size_t count = 0;
  double p50 = 0, p95 = 0, p99 = 0, max = 0, mean = 0;  // milliseconds; all 0 when count is 0
};

LatencySummary summarize_latencies(std::vector<double> latencies_ms);

// Answer quality against expected answers. A question whose answer is missing (the request
// failed, the body did not parse, the key or the type did not match) is `unanswered`: it counts
// as wrong for choice and noul accuracy (their denominators are all graded questions) and is left
// out of the score MAE, whose denominator is the answered score questions.
struct QualityTally {
  size_t choice_total = 0, choice_correct = 0, choice_unanswered = 0;
  size_t noul_total = 0, noul_correct = 0, noul_unanswered = 0;
  size_t score_total = 0, score_answered = 0;
  double score_abs_error_sum = 0;

  void merge(const QualityTally& other);
  bool any() const { return choice_total + noul_total + score_total > 0; }
};

// Grades one response. `expected` maps question key → choice name (string), noul answer
// (boolean; p ≥ 0.5 counts as yes) or expected score level index (integer). `answers` is the
// response's "answers" object, or nullopt when there is none (failed request).
QualityTally grade_answers(const nlohmann::json& expected, const std::optional<nlohmann::json>& answers);

// Throws std::invalid_argument when an expected answer is not a string, boolean or integer.
void check_expected_answers(const nlohmann::json& expected);

struct RequestOutcome {
  double latency_ms = 0;
  int status = 0;                // HTTP status; 0 when no complete response arrived
  std::string connection_error;  // kind of failure when status is 0 ("connect", "timeout", ...)
};

// One worker's (or the merged) record of measured requests.
struct BenchTally {
  std::vector<double> latencies_ms;     // every measured request, failures included
  std::vector<double> ok_latencies_ms;  // status 200 only
  std::map<int, size_t> statuses;       // every response by status, 200 included
  std::map<std::string, size_t> connection_errors;
  QualityTally quality;

  void record(const RequestOutcome& outcome);
  void merge(const BenchTally& other);
  size_t requests() const { return latencies_ms.size(); }
};

struct BenchSettings {
  std::string url;
  std::string workload;
  size_t workload_lines = 0;
  size_t concurrency = 1;
  size_t warmup = 0;
  std::optional<size_t> requests;
  std::optional<double> duration_s;
  std::optional<std::string> model;
};

struct BenchSummary {
  BenchSettings settings;
  double elapsed_s = 0;
  size_t requests = 0;
  size_t ok = 0;
  size_t errors = 0;  // non-200 responses + connection errors
  double requests_per_second = 0;
  double ok_per_second = 0;
  LatencySummary latency;     // all measured requests
  LatencySummary ok_latency;  // 200 only
  std::map<int, size_t> statuses;
  std::map<std::string, size_t> connection_errors;
  QualityTally quality;
};

BenchSummary summarize_bench(const BenchSettings& settings, const BenchTally& tally, double elapsed_s);

// The printed report. Percentiles are labelled nearest-rank.
std::string format_bench_summary(const BenchSummary& summary);

// The same numbers for --out.
nlohmann::ordered_json bench_summary_to_json(const BenchSummary& summary);

}  // namespace s1::cli
