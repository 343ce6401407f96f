#pragma once
// Prometheus text exposition (contract §1.3): labelled counters, gauges and histograms, written by
// request threads and executors, read by GET /metrics.

#include <array>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace s1::server {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Metrics {
 public:
  Metrics();

  void add_counter(const std::string& family, const Labels& labels, double amount = 1.0);
  void set_gauge(const std::string& family, const Labels& labels, double value);
  void add_gauge(const std::string& family, const Labels& labels, double amount);
  void observe(const std::string& family, const Labels& labels, double seconds);

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
    std::map<std::string, double> values;        // rendered labels → value
    std::map<std::string, Histogram> histograms;  // rendered labels → histogram
  };

  Family& family(const std::string& name);

  mutable std::mutex mutex_;
  std::map<std::string, Family> families_;
};

}  // namespace s1::server
