#pragma once
// Prometheus text exposition (contract §1.3): labelled counters, gauges and histograms, written by
// request threads and executors, read by GET /metrics.

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
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
  void observe(std::string_view family, const Labels& labels, double seconds);

  void add_counter(const Series& series, double amount = 1.0);
  void set_gauge(const Series& series, double value);
  void observe(const Series& series, double seconds);

  // A series a request writes, registered once: each writer thread then finds its slot in its own
  // shard by this number instead of two map lookups by string per write. Registering the same
  // family and labels again gives the same number. Write a hot series as a counter or as a
  // histogram of seconds, not both.
  using HotSeries = uint32_t;
  HotSeries hot(const Series& series);
  void add_counter(HotSeries series, double amount = 1.0);
  void observe(HotSeries series, double seconds);

  static std::string render_labels(const Labels& labels);

  // A histogram's bucket upper bounds: seconds for the *_seconds families, counts for the batch ones.
  using Bounds = std::array<double, 15>;

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
    const Bounds* bounds = nullptr;                            // the histograms' buckets
  };

  using Families = std::map<std::string, Family, std::less<>>;

  // What one writer thread counted and observed. Counters and histograms are sums, so each thread
  // adds to its own shard and /metrics adds the shards up: the request path takes no lock that
  // another thread takes per request (measured: the router's two HTTP threads met on one mutex three
  // times per forwarded request). The shard's own mutex is contended only by a scrape.
  // A hot series' value or histogram in one shard, found on the shard's first write of it (map
  // nodes stay where they are).
  struct HotSlot {
    double* value = nullptr;
    Histogram* histogram = nullptr;
  };
  struct alignas(64) Shard {
    std::thread::id writer;
    std::mutex mutex;
    Families families;
    std::vector<HotSlot> hot_slots;  // indexed by HotSeries
  };

  static Family& family(Families& families, std::string_view name);
  static void add_observation(Histogram& histogram, double value, const Bounds& bounds);
  Shard& own_shard();
  // `series`' value (cached as HotSlot::value, kept in Family::values) or histogram in `shard`,
  // whose mutex the caller holds; looked up on the shard's first write of it.
  template <typename Value>
  Value& hot_entry(Shard& shard, HotSeries series, Value* HotSlot::*cached,
                   std::map<std::string, Value, std::less<>> Family::*entries);

  // Gauges hold the last value set, which is not a sum over threads: they stay here, under mutex_.
  mutable std::mutex mutex_;
  Families families_;
  const uint64_t instance_;  // tells this Metrics from an earlier one at the same address
  mutable std::mutex shards_mutex_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::mutex hot_mutex_;
  std::vector<std::pair<std::string, std::string>> hot_series_;  // family and labels, by HotSeries
};

}  // namespace s1::server
