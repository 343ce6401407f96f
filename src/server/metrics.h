#pragma once
// Prometheus text exposition (contract §1.3): labelled counters, gauges and histograms, written by
// request threads and executors, read by GET /metrics.

#include <array>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace s1::server {

using Labels = std::vector<std::pair<std::string, std::string>>;

// A series named by labels the caller rendered once (Metrics::render_labels): per-request paths
// then write it without building label strings.
struct Series {
  std::string_view family;
  std::string_view labels;
};

class Metrics {
 public:
  Metrics();

  void add_counter(std::string_view family, const Labels& labels, double amount = 1.0);
  void set_gauge(std::string_view family, const Labels& labels, double value);
  void add_gauge(std::string_view family, const Labels& labels, double amount);
  void observe(std::string_view family, const Labels& labels, double seconds);

  void add_counter(const Series& series, double amount = 1.0);
  void set_gauge(const Series& series, double value);
  void observe(const Series& series, double seconds);

  static std::string render_labels(const Labels& labels);

  std::string render() const;

 private:
  struct Histogram {
    std::array<uint64_t, 16> bucket_counts{};
    uint64_t count = 0;
    double sum = 0.0;
  };
  struct Family {
    std::string type;  // counter, gauge, histogram
    std::string help;
    std::map<std::string, double, std::less<>> values;        // rendered labels → value
    std::map<std::string, Histogram, std::less<>> histograms;  // rendered labels → histogram
  };

  Family& family(std::string_view name);

  mutable std::mutex mutex_;
  std::map<std::string, Family, std::less<>> families_;
};

}  // namespace s1::server
