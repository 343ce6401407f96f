#pragma once
// A pool of upstream /v1/systemone workers (contract §7, §11.7): least-outstanding choice among
// healthy replicas, the others least recently failed first when none is (panic routing), pooled
// keep-alive connections, retries only for a failed connect, health polling of each replica.

#include "api/errors.h"
#include "router/header_list.h"
#include "router/upstream_url.h"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace s1::router {

using Clock = std::chrono::steady_clock;

struct UpstreamSettings {
  std::vector<std::string> urls;  // http://host:port[/base]
  std::optional<std::string> upstream_model;  // the name the workers know; the canonical id when absent
  std::string credential;  // sent as Bearer; never the client's key
  std::chrono::milliseconds connect_timeout{2'000};
  std::chrono::milliseconds health_interval{5'000};
  std::chrono::milliseconds health_timeout{2'000};
  // After a failed poll the next comes this soon, once: a worker started just after its router is
  // in use within it, not a whole interval later.
  std::chrono::milliseconds health_retry{1'000};
  size_t response_cap = 16 * 1024 * 1024;
  size_t max_in_flight = 256;  // forwarded requests at once; beyond it 503 overloaded
};

// Request and reply are meant to be kept per client connection and refilled: their strings and
// lists keep their storage from one request to the next.
struct UpstreamReply {
  int status = 0;
  HeaderList headers;  // end-to-end headers only
  std::string body;
  double seconds = 0.0;
};

struct UpstreamRequest {
  std::string target;  // path and query, e.g. /v1/systemone?trace=1
  std::string body;
  HeaderList headers;  // already stripped of hop-by-hop, Host, Cookie, Authorization
  std::string request_id;
  Clock::time_point deadline;
};

// Observations for metrics: outcome is one of request_outcomes.
inline constexpr std::string_view request_outcomes[] = {"ok", "connect_error", "timeout", "bad_response", "retried"};

struct PoolObserver {
  std::function<void(const std::string& replica, const std::string& outcome)> on_request;
  std::function<void(const std::string& replica, bool healthy)> on_health;
};

class UpstreamPool {
 public:
  UpstreamPool(std::string name, UpstreamSettings settings, PoolObserver observer = {});
  ~UpstreamPool();
  UpstreamPool(const UpstreamPool&) = delete;
  UpstreamPool& operator=(const UpstreamPool&) = delete;

  const std::string& name() const { return name_; }
  const std::string& upstream_model() const { return upstream_model_; }
  size_t replica_count() const;
  size_t healthy_count() const;
  const std::vector<std::string>& replica_urls() const { return settings_.urls; }

  // Starts polling every replica's /health, each on its own (a hung replica delays only its own
  // polls), the first poll at once; they run until the context stops.
  boost::asio::awaitable<void> poll_health();

  // One exchange with a worker: 502 upstream_unavailable, 502 upstream_bad_response or
  // 504 deadline_exceeded as §7.2 says, else nullopt and the worker's reply, whatever its status, in
  // `reply` (its storage reused; its body's too). Both must outlive the exchange.
  boost::asio::awaitable<std::optional<api::ApiError>> forward(const UpstreamRequest& request, UpstreamReply& reply);

  static bool is_hop_by_hop(std::string_view header_name);

  // Closes the kept-alive connections. A socket must go before the I/O context it was opened on,
  // and the pool outlives the server's contexts: the server calls this once they have stopped.
  void close_idle_connections();

 private:
  struct Replica;
  struct Connection;
  Replica* choose(const std::vector<const Replica*>& excluded);
  Replica* least_recently_failed(const std::vector<const Replica*>& excluded);
  boost::asio::awaitable<void> poll_replica(Replica& replica);
  boost::asio::awaitable<std::string> probe(Replica& replica);
  // Records a poll's or a connect's verdict; `failure` says why when unhealthy. State changes (and
  // a replica's first poll, `first`) are logged.
  void set_health(Replica& replica, bool healthy, std::string_view failure, bool first = false);

  std::string name_;
  UpstreamSettings settings_;
  std::string upstream_model_;
  PoolObserver observer_;
  std::vector<std::unique_ptr<Replica>> replicas_;
  std::atomic<uint64_t> round_robin_{0};
  std::atomic<size_t> in_flight_{0};
};

}  // namespace s1::router
