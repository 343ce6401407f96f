#include "server/metrics.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>

namespace s1::server {
namespace {

// Upper bounds in seconds: from sub-millisecond serving overhead to slow multi-second models.
constexpr Metrics::Bounds second_bounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                           0.25,   0.5,   1.0,    2.5,   5.0,  10.0,  30.0};
// Upper bounds of counts (requests or tokens per batch): powers of two.
constexpr Metrics::Bounds count_bounds = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};

struct FamilySpec {
  const char* name;
  const char* type;
  const char* help;
  const Metrics::Bounds* bounds = &second_bounds;
};

constexpr FamilySpec known_families[] = {
    {"s1serve_requests_total", "counter", "HTTP requests answered, by route and status"},
    {"s1serve_rejected_total", "counter", "Requests rejected before inference, by reason"},
    {"s1serve_input_tokens_total", "counter", "Prompt token positions evaluated, by model"},
    {"s1serve_questions_total", "counter", "Questions answered, by model and type"},
    {"s1serve_upstream_requests_total", "counter", "Requests forwarded upstream, by outcome"},
    {"s1serve_request_duration_seconds", "histogram", "Time from request headers to response, by route"},
    {"s1serve_queue_wait_seconds", "histogram", "Time a request waited in a model's queue"},
    {"s1serve_inference_seconds", "histogram", "Time a model spent on one request (its batch's run)"},
    {"s1serve_batch_requests", "histogram", "Requests per batch a model ran together", &count_bounds},
    {"s1serve_batch_tokens", "histogram", "Input tokens per batch a model ran together", &count_bounds},
    {"s1serve_queue_depth", "gauge", "Requests waiting in a model's queue"},
    {"s1serve_queue_capacity", "gauge", "Capacity of a model's queue"},
    {"s1serve_model_ready", "gauge", "1 when the model has warmed up and serves requests"},
    {"s1serve_in_flight_requests", "gauge", "Requests being handled now"},
    {"s1serve_upstream_replica_healthy", "gauge", "1 when the upstream replica answered its last health poll"},
    {"s1serve_log_lines_dropped_total", "counter", "Log lines dropped because stderr did not keep up"},
    {"s1serve_prefix_cache_hits_total", "counter", "Requests whose state prefix (or part of it) was cached"},
    {"s1serve_prefix_cache_misses_total", "counter", "Prefix cache look-ups that found nothing"},
    {"s1serve_prefix_cache_evictions_total", "counter", "Prefixes dropped from the cache to fit its bytes"},
    {"s1serve_prefix_cache_entries", "gauge", "Prefixes in the cache"},
    {"s1serve_prefix_cache_bytes", "gauge", "Bytes of the cached prefix memories"},
    {"s1serve_prefix_cache_capacity_bytes", "gauge", "The prefix cache's capacity (prefix_cache)"},
};

std::string escape_label_value(const std::string& value) {
  std::string out;
  for (const char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string format_number(double value) {
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

std::string with_labels(const std::string& name, const std::string& labels) {
  return labels.empty() ? name : name + '{' + labels + '}';
}

// The series' slot in a map keyed by rendered labels, found without building a key when it exists.
template <typename Map>
typename Map::mapped_type& slot(Map& map, std::string_view labels) {
  const auto found = map.find(labels);
  if (found != map.end()) return found->second;
  return map.emplace(std::string(labels), typename Map::mapped_type{}).first->second;
}

std::atomic<uint64_t> next_instance{1};

}  // namespace

std::string Metrics::render_labels(const Labels& labels) {
  std::string out;
  for (const auto& [name, value] : labels) {
    if (!out.empty()) out += ',';
    out += name + "=\"" + escape_label_value(value) + '"';
  }
  return out;
}

Metrics::Metrics() : instance_(next_instance.fetch_add(1)) {
  for (const FamilySpec& spec : known_families) {
    Family& entry = families_[spec.name];
    entry.type = spec.type;
    entry.help = spec.help;
    entry.bounds = spec.bounds;
  }
}

Metrics::Family& Metrics::family(Families& families, std::string_view name) {
  Family& entry = slot(families, name);
  if (entry.type.empty()) {
    entry.type = "untyped";
    entry.bounds = &second_bounds;
    for (const FamilySpec& spec : known_families) {
      if (name == spec.name) entry.bounds = spec.bounds;
    }
  }
  return entry;
}

Metrics::Shard& Metrics::own_shard() {
  // One Metrics serves the process: the last one a thread wrote to is remembered. A thread id is
  // reused only after its thread ended, so a shard found by id has no other writer.
  thread_local uint64_t cached_instance = 0;
  thread_local Shard* cached_shard = nullptr;
  if (cached_instance == instance_) return *cached_shard;
  const std::thread::id self = std::this_thread::get_id();
  std::lock_guard lock(shards_mutex_);
  auto found = std::find_if(shards_.begin(), shards_.end(), [self](const auto& shard) { return shard->writer == self; });
  if (found == shards_.end()) {
    shards_.push_back(std::make_unique<Shard>());
    shards_.back()->writer = self;
    found = shards_.end() - 1;
  }
  cached_instance = instance_;
  cached_shard = found->get();
  return *cached_shard;
}

void Metrics::add_counter(std::string_view name, const Labels& labels, double amount) {
  add_counter(Series{name, render_labels(labels)}, amount);
}

void Metrics::set_gauge(std::string_view name, const Labels& labels, double value) {
  set_gauge(Series{name, render_labels(labels)}, value);
}

void Metrics::observe(std::string_view name, const Labels& labels, double seconds) {
  observe(Series{name, render_labels(labels)}, seconds);
}

Metrics::HotSeries Metrics::hot(const Series& series) {
  std::lock_guard lock(hot_mutex_);
  for (size_t i = 0; i < hot_series_.size(); ++i) {
    if (hot_series_[i].first == series.family && hot_series_[i].second == series.labels) {
      return static_cast<HotSeries>(i);
    }
  }
  hot_series_.emplace_back(series.family, series.labels);
  return static_cast<HotSeries>(hot_series_.size() - 1);
}

template <typename Value>
Value& Metrics::hot_entry(Shard& shard, HotSeries series, Value* HotSlot::*cached,
                          std::map<std::string, Value, std::less<>> Family::*entries) {
  if (series >= shard.hot_slots.size()) shard.hot_slots.resize(series + 1);
  Value*& entry = shard.hot_slots[series].*cached;
  if (entry == nullptr) {
    std::lock_guard hot_lock(hot_mutex_);
    const auto& [name, labels] = hot_series_[series];
    entry = &slot(family(shard.families, name).*entries, labels);
  }
  return *entry;
}

void Metrics::add_counter(HotSeries series, double amount) {
  Shard& shard = own_shard();
  std::lock_guard lock(shard.mutex);
  hot_entry(shard, series, &HotSlot::value, &Family::values) += amount;
}

void Metrics::observe(HotSeries series, double seconds) {
  Shard& shard = own_shard();
  std::lock_guard lock(shard.mutex);
  add_observation(hot_entry(shard, series, &HotSlot::histogram, &Family::histograms), seconds, second_bounds);
}

void Metrics::add_counter(const Series& series, double amount) {
  Shard& shard = own_shard();
  std::lock_guard lock(shard.mutex);
  slot(family(shard.families, series.family).values, series.labels) += amount;
}

void Metrics::set_gauge(const Series& series, double value) {
  std::lock_guard lock(mutex_);
  slot(family(families_, series.family).values, series.labels) = value;
}

void Metrics::observe(const Series& series, double seconds) {
  Shard& shard = own_shard();
  std::lock_guard lock(shard.mutex);
  Family& entry = family(shard.families, series.family);
  add_observation(slot(entry.histograms, series.labels), seconds, *entry.bounds);
}

void Metrics::add_observation(Histogram& histogram, double seconds, const Bounds& bounds) {
  size_t bucket = 0;
  while (bucket < bounds.size() && seconds > bounds[bucket]) ++bucket;
  ++histogram.bucket_counts[bucket];
  ++histogram.count;
  histogram.sum += seconds;
}

std::string Metrics::render() const {
  Families merged;
  {
    std::lock_guard lock(mutex_);
    merged = families_;
  }
  {
    std::lock_guard shards_lock(shards_mutex_);
    for (const auto& shard : shards_) {
      std::lock_guard lock(shard->mutex);
      for (const auto& [name, added] : shard->families) {
        Family& entry = family(merged, name);
        for (const auto& [labels, value] : added.values) slot(entry.values, labels) += value;
        for (const auto& [labels, histogram] : added.histograms) {
          Histogram& sum = slot(entry.histograms, labels);
          for (size_t i = 0; i < sum.bucket_counts.size(); ++i) sum.bucket_counts[i] += histogram.bucket_counts[i];
          sum.count += histogram.count;
          sum.sum += histogram.sum;
        }
      }
    }
  }
  std::string out;
  for (const auto& [name, entry] : merged) {
    out += "# HELP " + name + ' ' + entry.help + '\n';
    out += "# TYPE " + name + ' ' + entry.type + '\n';
    for (const auto& [labels, value] : entry.values) out += with_labels(name, labels) + ' ' + format_number(value) + '\n';
    for (const auto& [labels, histogram] : entry.histograms) {
      const std::string prefix = labels.empty() ? "" : labels + ',';
      uint64_t cumulative = 0;
      const Bounds& bounds = *entry.bounds;
      for (size_t i = 0; i <= bounds.size(); ++i) {
        cumulative += histogram.bucket_counts[i];
        const std::string bound = i < bounds.size() ? format_number(bounds[i]) : "+Inf";
        out += name + "_bucket{" + prefix + "le=\"" + bound + "\"} " + std::to_string(cumulative) + '\n';
      }
      out += with_labels(name + "_sum", labels) + ' ' + format_number(histogram.sum) + '\n';
      out += with_labels(name + "_count", labels) + ' ' + std::to_string(histogram.count) + '\n';
    }
  }
  return out;
}

}  // namespace s1::server
