#pragma once
// One loaded model: a bounded admission queue and one executor thread that owns the engine's state.
// Work that is abandoned (deadline passed, client gone) before it starts is dropped, never run.

#include "runtime/engine.h"
#include "runtime/prefix_cache.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace s1::runtime {

using Clock = std::chrono::steady_clock;

enum class ModelState { loading, warming, ready, failed };
std::string_view model_state_name(ModelState state);

struct JobOutcome {
  api::Result<std::vector<api::Answer>> answers = api::ApiError{};
  double queue_seconds = 0.0;
  double inference_seconds = 0.0;
  int64_t cached_tokens = 0;  // the plan's input tokens reused from the prefix cache
};

// Shared by the request that submitted it and the executor; exactly one of them answers the client.
class Job {
 public:
  Job(std::shared_ptr<const api::DecisionRequest> request, std::unique_ptr<Plan> plan, Clock::time_point deadline,
      std::function<void(JobOutcome)> on_done)
      : request_(std::move(request)), plan_(std::move(plan)), deadline_(deadline), on_done_(std::move(on_done)) {}

  // True for the first caller only: the executor delivering an outcome, or the request giving up.
  bool claim() { return !claimed_.exchange(true); }
  bool claimed() const { return claimed_.load(); }

  const api::DecisionRequest& request() const { return *request_; }
  Plan& plan() { return *plan_; }
  Clock::time_point deadline() const { return deadline_; }
  Clock::time_point enqueued_at() const { return enqueued_at_; }
  void deliver(JobOutcome outcome) { on_done_(std::move(outcome)); }

 private:
  // Shared: a request that gave up at its deadline may be gone while its inference still runs.
  std::shared_ptr<const api::DecisionRequest> request_;
  std::unique_ptr<Plan> plan_;
  Clock::time_point deadline_;
  Clock::time_point enqueued_at_ = Clock::now();
  std::function<void(JobOutcome)> on_done_;
  std::atomic<bool> claimed_{false};
};

// How the executor groups queued requests into one run_batch (for engines that take more than one).
struct BatchLimits {
  // On by default: on a quiet machine MiniLM batched served 1.2-1.3x the requests/s of one at a time
  // at concurrency 4 and 16 and the same at 1 (docs/benchmarks/batching.md); 1 turns it off.
  size_t max_requests = 16;   // also bounded by the engine's max_batch_requests
  int64_t max_tokens = 8192;  // the batch's summed input_tokens; a longer request still runs alone
  // An idle executor starts at once, unless its previous batch had more requests than are waiting
  // now: then it waits this long (from the oldest's arrival) for the rest of such a group, which a
  // closed loop of clients sends again only after the previous answers went out.
  std::chrono::microseconds max_wait{500};
};

struct RunnerOptions {
  // Admitted requests are this many waiting plus the batch running (between batches, plus the next
  // batch's requests); a batch's slots free when the run ends, before its answers are delivered.
  size_t queue_capacity = 32;
  BatchLimits batch;
  // Bytes of decoder prefix memories kept across requests, for engines that reuse them; 0: none.
  size_t prefix_cache_bytes = 256 * 1024 * 1024;
};

// Retry-After for a full queue: the ceiling of the seconds until the running request's slot frees,
// from the measured seconds per run and how long the current one has run; at least 1.
int64_t retry_after_seconds(double seconds_per_run, double running_for);

// Observations the server turns into metrics; the runtime does not know how they are exported.
struct RunnerObserver {
  std::function<void(double queue_seconds, double inference_seconds)> on_inference;
  std::function<void(size_t requests, int64_t tokens)> on_batch;
  std::function<void(ModelState)> on_state;
};

class ModelRunner {
 public:
  ModelRunner(std::string name, std::unique_ptr<Engine> engine, RunnerOptions options, RunnerObserver observer = {});
  ~ModelRunner();
  ModelRunner(const ModelRunner&) = delete;
  ModelRunner& operator=(const ModelRunner&) = delete;

  // Starts the executor: warm-up first, then queued work.
  void start();
  // Drops queued work (answered 503) and joins the executor after its current job.
  void stop();

  const std::string& name() const { return name_; }
  const Engine& engine() const { return *engine_; }
  const ModelInfo& info() const { return info_; }
  ModelState state() const { return state_.load(); }
  std::string failure_reason() const;
  size_t queue_depth() const;
  size_t queue_capacity() const { return options_.queue_capacity; }
  // The model's prefix cache; nullptr when its engine reuses no prefixes or the capacity is 0.
  const PrefixCache* prefix_cache() const { return prefix_cache_.get(); }

  // Step 12 of the check order: 503 overloaded when the queue is full (Retry-After from the measured
  // drain rate), 503 model_unavailable when the model is not ready.
  api::Result<std::shared_ptr<Job>> submit(std::shared_ptr<const api::DecisionRequest> request,
                                           std::unique_ptr<Plan> plan,
                                           Clock::time_point deadline, std::function<void(JobOutcome)> on_done);

  // The request gave up on `job` (deadline or disconnect) after claiming it: free its queue slot.
  void withdraw(const std::shared_ptr<Job>& job);

 private:
  void executor_loop();
  bool warm_up();
  void set_state(ModelState state);
  // Under `lock` (of mutex_), with work queued: waits for the batch's closing (BatchLimits) and
  // takes it from the queue; work already past its deadline goes to `late` instead.
  std::vector<std::shared_ptr<Job>> gather(std::unique_lock<std::mutex>& lock, std::vector<std::shared_ptr<Job>>& late);
  std::vector<JobOutcome> execute(const std::vector<std::shared_ptr<Job>>& batch);
  // The most requests one run_batch takes: the batch limit and the engine's, at least 1.
  size_t batch_requests() const;
  // Under mutex_: the overload refusal, with the estimated wait for a slot.
  api::ApiError overloaded() const;
  // Under mutex_: a run ended after `seconds`; its slot is free.
  void run_ended(double seconds);

  std::string name_;
  std::unique_ptr<Engine> engine_;
  ModelInfo info_;
  RunnerOptions options_;
  RunnerObserver observer_;
  std::unique_ptr<PrefixCache> prefix_cache_;
  std::atomic<ModelState> state_{ModelState::loading};

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::string failure_reason_;
  bool stopping_ = false;
  bool running_ = false;  // a batch taken from the queue has not finished running
  size_t last_batch_size_ = 1;
  Clock::time_point run_started_;
  double seconds_per_run_ = 0.0;  // moving average of runs (the warm-up's first), 0 before any
  std::thread executor_;
};

}  // namespace s1::runtime
