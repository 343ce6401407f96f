#include "cli/bench_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

namespace s1::cli {

double nearest_rank_percentile(const std::vector<double>& sorted, double percent) {
  if (sorted.empty()) throw std::invalid_argument("percentile of no values");
  if (!(percent > 0 && percent <= 100)) throw std::invalid_argument("percentile must be in (0, 100]");
  // percent · n is exact for whole percents and realistic n, so ceil() sees no rounding noise.
  const double rank = std::ceil(percent * static_cast<double>(sorted.size()) / 100.0);
  const size_t index = std::clamp<size_t>(static_cast<size_t>(rank), 1, sorted.size()) - 1;
  return sorted[index];
}

LatencySummary summarize_latencies(std::vector<double> latencies_ms) {
  LatencySummary summary;
  summary.count = latencies_ms.size();
  if (latencies_ms.empty()) return summary;
  std::sort(latencies_ms.begin(), latencies_ms.end());
  summary.p50 = nearest_rank_percentile(latencies_ms, 50);
  summary.p95 = nearest_rank_percentile(latencies_ms, 95);
  summary.p99 = nearest_rank_percentile(latencies_ms, 99);
  summary.max = latencies_ms.back();
  summary.mean = std::accumulate(latencies_ms.begin(), latencies_ms.end(), 0.0) / static_cast<double>(latencies_ms.size());
  return summary;
}

void QualityTally::merge(const QualityTally& other) {
  choice_total += other.choice_total;
  choice_correct += other.choice_correct;
  choice_unanswered += other.choice_unanswered;
  noul_total += other.noul_total;
  noul_correct += other.noul_correct;
  noul_unanswered += other.noul_unanswered;
  score_total += other.score_total;
  score_answered += other.score_answered;
  score_abs_error_sum += other.score_abs_error_sum;
}

void check_expected_answers(const nlohmann::json& expected) {
  if (!expected.is_object()) throw std::invalid_argument("\"expected\" must be an object of question key → answer");
  for (const auto& [key, value] : expected.items()) {
    if (!value.is_string() && !value.is_boolean() && !value.is_number_integer()) {
      throw std::invalid_argument("expected answer for '" + key +
                                  "' must be a choice name (string), a noul answer (boolean) or a score level (integer)");
    }
  }
}

QualityTally grade_answers(const nlohmann::json& expected, const std::optional<nlohmann::json>& answers) {
  QualityTally tally;
  for (const auto& [key, want] : expected.items()) {
    const nlohmann::json* answer = nullptr;
    if (answers && answers->is_object()) {
      if (auto it = answers->find(key); it != answers->end() && it->is_object()) answer = &*it;
    }
    const auto member = [&](const char* name, auto check) -> const nlohmann::json* {
      if (answer == nullptr) return nullptr;
      auto it = answer->find(name);
      return it != answer->end() && check(*it) ? &*it : nullptr;
    };
    if (want.is_string()) {
      ++tally.choice_total;
      const nlohmann::json* choice = member("choice", [](const nlohmann::json& v) { return v.is_string(); });
      if (choice == nullptr) ++tally.choice_unanswered;
      else if (choice->get_ref<const std::string&>() == want.get_ref<const std::string&>()) ++tally.choice_correct;
    } else if (want.is_boolean()) {
      ++tally.noul_total;
      const nlohmann::json* noul = member("noul", [](const nlohmann::json& v) { return v.is_number(); });
      if (noul == nullptr) ++tally.noul_unanswered;
      else if ((noul->get<double>() >= 0.5) == want.get<bool>()) ++tally.noul_correct;
    } else if (want.is_number_integer()) {
      ++tally.score_total;
      const nlohmann::json* score = member("score", [](const nlohmann::json& v) { return v.is_number(); });
      if (score != nullptr) {
        ++tally.score_answered;
        tally.score_abs_error_sum += std::abs(score->get<double>() - want.get<double>());
      }
    }
  }
  return tally;
}

void BenchTally::record(const RequestOutcome& outcome) {
  latencies_ms.push_back(outcome.latency_ms);
  if (outcome.status == 0) {
    ++connection_errors[outcome.connection_error.empty() ? std::string("io") : outcome.connection_error];
  } else {
    ++statuses[outcome.status];
    if (outcome.status == 200) ok_latencies_ms.push_back(outcome.latency_ms);
  }
}

void BenchTally::merge(const BenchTally& other) {
  latencies_ms.insert(latencies_ms.end(), other.latencies_ms.begin(), other.latencies_ms.end());
  ok_latencies_ms.insert(ok_latencies_ms.end(), other.ok_latencies_ms.begin(), other.ok_latencies_ms.end());
  for (const auto& [status, count] : other.statuses) statuses[status] += count;
  for (const auto& [kind, count] : other.connection_errors) connection_errors[kind] += count;
  quality.merge(other.quality);
}

BenchSummary summarize_bench(const BenchSettings& settings, const BenchTally& tally, double elapsed_s) {
  BenchSummary summary;
  summary.settings = settings;
  summary.elapsed_s = elapsed_s;
  summary.requests = tally.requests();
  summary.ok = tally.ok_latencies_ms.size();
  summary.errors = summary.requests - summary.ok;
  if (elapsed_s > 0) {
    summary.requests_per_second = static_cast<double>(summary.requests) / elapsed_s;
    summary.ok_per_second = static_cast<double>(summary.ok) / elapsed_s;
  }
  summary.latency = summarize_latencies(tally.latencies_ms);
  summary.ok_latency = summarize_latencies(tally.ok_latencies_ms);
  summary.statuses = tally.statuses;
  summary.connection_errors = tally.connection_errors;
  summary.quality = tally.quality;
  return summary;
}

namespace {

std::string ratio(size_t part, size_t whole) {
  if (whole == 0) return fmt::format("{}/{}", part, whole);
  return fmt::format("{}/{} = {:.2f}%", part, whole, 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

std::string latency_line(const LatencySummary& latency) {
  if (latency.count == 0) return "(none)";
  return fmt::format("p50 {:.3f}  p95 {:.3f}  p99 {:.3f}  max {:.3f}  mean {:.3f}", latency.p50, latency.p95, latency.p99,
                     latency.max, latency.mean);
}

nlohmann::ordered_json latency_json(const LatencySummary& latency) {
  nlohmann::ordered_json out;
  out["count"] = latency.count;
  out["p50"] = latency.p50;
  out["p95"] = latency.p95;
  out["p99"] = latency.p99;
  out["max"] = latency.max;
  out["mean"] = latency.mean;
  return out;
}

}  // namespace

std::string format_bench_summary(const BenchSummary& summary) {
  const BenchSettings& settings = summary.settings;
  std::ostringstream out;
  out << fmt::format("s1serve bench  {}  workload {} ({} lines)\n", settings.url, settings.workload,
                     settings.workload_lines);
  out << fmt::format("  concurrency {}, warm-up {} (not counted), measured {} requests in {:.3f} s\n", settings.concurrency,
                     settings.warmup, summary.requests, summary.elapsed_s);
  out << fmt::format("  throughput   {:.2f} requests/s ({:.2f}/s with status 200)\n", summary.requests_per_second,
                     summary.ok_per_second);
  out << fmt::format("  latency ms   {}\n", latency_line(summary.latency));
  out << fmt::format("               nearest-rank percentiles over all {} measured requests, failures included\n",
                     summary.latency.count);
  if (summary.ok_latency.count != summary.latency.count) {
    out << fmt::format("  latency ms   {}  (status 200 only, {} requests)\n", latency_line(summary.ok_latency),
                       summary.ok_latency.count);
  }
  std::string statuses;
  for (const auto& [status, count] : summary.statuses) {
    statuses += fmt::format("{}{}: {}", statuses.empty() ? "" : ", ", status, count);
  }
  out << "  status       " << (statuses.empty() ? "(no responses)" : statuses) << "\n";
  size_t connection_errors = 0;
  std::string connection;
  for (const auto& [kind, count] : summary.connection_errors) {
    connection_errors += count;
    connection += fmt::format(", {} {}", kind, count);
  }
  out << fmt::format("  errors       {} of {} (non-200 responses {}, connection errors {}{})\n", summary.errors,
                     summary.requests, summary.errors - connection_errors, connection_errors, connection);
  const QualityTally& quality = summary.quality;
  if (quality.any()) {
    out << "  quality      (unanswered questions count as wrong for accuracy)\n";
    if (quality.choice_total > 0) {
      out << fmt::format("    choice accuracy  {} ({} unanswered)\n", ratio(quality.choice_correct, quality.choice_total),
                         quality.choice_unanswered);
    }
    if (quality.noul_total > 0) {
      out << fmt::format("    noul accuracy    {} ({} unanswered; p >= 0.5 counts as yes)\n",
                         ratio(quality.noul_correct, quality.noul_total), quality.noul_unanswered);
    }
    if (quality.score_total > 0) {
      if (quality.score_answered > 0) {
        out << fmt::format("    score MAE        {:.4f} over {} answered score questions (of {})\n",
                           quality.score_abs_error_sum / static_cast<double>(quality.score_answered),
                           quality.score_answered, quality.score_total);
      } else {
        out << fmt::format("    score MAE        n/a: 0 answered score questions (of {})\n", quality.score_total);
      }
    }
  }
  return out.str();
}

nlohmann::ordered_json bench_summary_to_json(const BenchSummary& summary) {
  const BenchSettings& settings = summary.settings;
  nlohmann::ordered_json out;
  out["url"] = settings.url;
  out["workload"] = settings.workload;
  out["workload_lines"] = settings.workload_lines;
  out["concurrency"] = settings.concurrency;
  out["warmup"] = settings.warmup;
  out["requested"] = settings.requests ? nlohmann::ordered_json(*settings.requests) : nlohmann::ordered_json(nullptr);
  out["duration_s"] = settings.duration_s ? nlohmann::ordered_json(*settings.duration_s) : nlohmann::ordered_json(nullptr);
  out["model"] = settings.model ? nlohmann::ordered_json(*settings.model) : nlohmann::ordered_json(nullptr);
  out["percentile_method"] = "nearest-rank";
  out["elapsed_s"] = summary.elapsed_s;
  out["requests"] = summary.requests;
  out["ok"] = summary.ok;
  out["errors"] = summary.errors;
  out["requests_per_second"] = summary.requests_per_second;
  out["ok_per_second"] = summary.ok_per_second;
  out["latency_ms"] = latency_json(summary.latency);
  out["ok_latency_ms"] = latency_json(summary.ok_latency);
  nlohmann::ordered_json statuses = nlohmann::ordered_json::object();
  for (const auto& [status, count] : summary.statuses) statuses[std::to_string(status)] = count;
  out["statuses"] = statuses;
  nlohmann::ordered_json connection = nlohmann::ordered_json::object();
  for (const auto& [kind, count] : summary.connection_errors) connection[kind] = count;
  out["connection_errors"] = connection;
  const QualityTally& quality = summary.quality;
  nlohmann::ordered_json quality_json = nlohmann::ordered_json::object();
  if (quality.choice_total > 0) {
    quality_json["choice"] = {{"correct", quality.choice_correct},
                              {"total", quality.choice_total},
                              {"unanswered", quality.choice_unanswered},
                              {"accuracy", static_cast<double>(quality.choice_correct) / static_cast<double>(quality.choice_total)}};
  }
  if (quality.noul_total > 0) {
    quality_json["noul"] = {{"correct", quality.noul_correct},
                            {"total", quality.noul_total},
                            {"unanswered", quality.noul_unanswered},
                            {"accuracy", static_cast<double>(quality.noul_correct) / static_cast<double>(quality.noul_total)}};
  }
  if (quality.score_total > 0) {
    nlohmann::ordered_json mae = nullptr;
    if (quality.score_answered > 0) mae = quality.score_abs_error_sum / static_cast<double>(quality.score_answered);
    quality_json["score"] = {{"mae", mae}, {"answered", quality.score_answered}, {"total", quality.score_total}};
  }
  out["quality"] = quality_json;
  return out;
}

}  // namespace s1::cli
