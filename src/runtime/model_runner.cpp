#include "runtime/model_runner.h"

#include <algorithm>
#include <cmath>
#include <exception>

namespace s1::runtime {

std::string_view model_state_name(ModelState state) {
  switch (state) {
    case ModelState::loading: return "loading";
    case ModelState::warming: return "warming";
    case ModelState::ready: return "ready";
    case ModelState::failed: return "failed";
  }
  return "failed";
}

namespace {
double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// The weight of the newest run in the moving average: recent enough to follow a change of load
// (longer states, another batch size), smooth enough that one outlier does not swing Retry-After.
constexpr double newest_run_weight = 0.2;
}  // namespace

int64_t retry_after_seconds(double seconds_per_run, double running_for) {
  const double remaining = seconds_per_run - std::max(running_for, 0.0);
  if (!(remaining > 1.0)) return 1;  // also NaN
  constexpr double longest = 86'400.0;  // a bound for the conversion; no client waits a day
  return static_cast<int64_t>(std::ceil(std::min(remaining, longest)));
}

ModelRunner::ModelRunner(std::string name, std::unique_ptr<Engine> engine, RunnerOptions options,
                         RunnerObserver observer)
    : name_(std::move(name)),
      engine_(std::move(engine)),
      info_(engine_->info()),
      options_(options),
      observer_(std::move(observer)) {}

ModelRunner::~ModelRunner() { stop(); }

void ModelRunner::start() { executor_ = std::thread([this] { executor_loop(); }); }

void ModelRunner::stop() {
  std::deque<std::shared_ptr<Job>> dropped;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    dropped.swap(queue_);
  }
  wake_.notify_all();
  for (const auto& job : dropped) {
    if (job->claim()) {
      JobOutcome outcome;
      outcome.answers = api::ApiError::model_unavailable(name_, /*failed=*/true);
      job->deliver(std::move(outcome));
    }
  }
  if (executor_.joinable()) executor_.join();
}

std::string ModelRunner::failure_reason() const {
  std::lock_guard lock(mutex_);
  return failure_reason_;
}

size_t ModelRunner::queue_depth() const {
  std::lock_guard lock(mutex_);
  return queue_.size();
}

void ModelRunner::set_state(ModelState state) {
  state_.store(state);
  if (observer_.on_state) observer_.on_state(state);
}

api::Result<std::shared_ptr<Job>> ModelRunner::submit(std::shared_ptr<const api::DecisionRequest> request,
                                                      std::unique_ptr<Plan> plan,
                                                      Clock::time_point deadline,
                                                      std::function<void(JobOutcome)> on_done) {
  const ModelState current = state();
  if (current != ModelState::ready) return api::ApiError::model_unavailable(name_, current == ModelState::failed);
  auto job = std::make_shared<Job>(std::move(request), std::move(plan), deadline, std::move(on_done));
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return api::ApiError::model_unavailable(name_, /*failed=*/false);
    if (queue_.size() + (running_ ? 1 : 0) > options_.queue_capacity) return overloaded();
    queue_.push_back(job);
  }
  wake_.notify_one();
  return job;
}

api::ApiError ModelRunner::overloaded() const {
  api::ApiError error = api::ApiError::make(api::ErrorCode::overloaded, "The model's queue is full; retry shortly");
  const double running_for = running_ ? seconds_between(run_started_, Clock::now()) : 0.0;
  const std::string seconds = std::to_string(retry_after_seconds(seconds_per_run_, running_for));
  for (auto& [name, value] : error.headers) {
    if (name == "Retry-After") value = seconds;
  }
  return error;
}

void ModelRunner::run_ended(double seconds) {
  running_ = false;
  seconds_per_run_ =
      seconds_per_run_ == 0.0 ? seconds : (1.0 - newest_run_weight) * seconds_per_run_ + newest_run_weight * seconds;
}

void ModelRunner::withdraw(const std::shared_ptr<Job>& job) {
  std::lock_guard lock(mutex_);
  const auto found = std::find(queue_.begin(), queue_.end(), job);
  if (found != queue_.end()) queue_.erase(found);
}

bool ModelRunner::warm_up() {
  set_state(ModelState::warming);
  std::string reason;
  const Clock::time_point started = Clock::now();
  try {
    const api::DecisionRequest request = engine_->warm_up_request();
    auto plan = engine_->prepare(request, PrepareLimits{});
    if (!plan) {
      reason = "warm-up request was refused";
    } else if (auto outputs = engine_->run(**plan); !outputs) {
      reason = "warm-up inference failed";
    } else if (auto answers = engine_->finish(request, **plan, std::move(outputs.value())); !answers) {
      reason = "warm-up produced non-finite probabilities";
    }
  } catch (const std::exception&) {
    reason = "warm-up failed";
  }
  std::lock_guard lock(mutex_);
  if (reason.empty()) {
    run_ended(seconds_between(started, Clock::now()));
    return true;
  }
  failure_reason_ = reason;
  return false;
}

JobOutcome ModelRunner::execute(Job& job) {
  JobOutcome outcome;
  const Clock::time_point started = Clock::now();
  outcome.queue_seconds = seconds_between(job.enqueued_at(), started);
  try {
    auto outputs = engine_->run(job.plan());
    if (!outputs) {
      outcome.answers = std::move(outputs.error());
    } else {
      outcome.answers = engine_->finish(job.request(), job.plan(), std::move(outputs.value()));
    }
  } catch (const std::exception&) {
    outcome.answers = api::ApiError::make(api::ErrorCode::internal_error, "Inference failed");
  }
  outcome.inference_seconds = seconds_between(started, Clock::now());
  if (observer_.on_inference) observer_.on_inference(outcome.queue_seconds, outcome.inference_seconds);
  return outcome;
}

void ModelRunner::executor_loop() {
  if (!warm_up()) {
    set_state(ModelState::failed);
    return;
  }
  set_state(ModelState::ready);
  while (true) {
    std::shared_ptr<Job> job;
    bool late = false;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      if (job->claimed()) continue;  // its request already gave up
      late = Clock::now() >= job->deadline();
      if (!late) {
        running_ = true;
        run_started_ = Clock::now();
      }
    }
    // Work not started before its deadline is answered 504 without running.
    if (late) {
      if (job->claim()) {
        JobOutcome outcome;
        outcome.answers = api::ApiError::make(api::ErrorCode::deadline_exceeded, "The request's deadline passed");
        job->deliver(std::move(outcome));
      }
      continue;
    }
    JobOutcome outcome = execute(*job);
    {
      // Before the answer goes out: a client that sends its next request on reading it finds the
      // slot free (queue N admits N waiting plus the one running, never one less).
      std::lock_guard lock(mutex_);
      run_ended(outcome.inference_seconds);
    }
    if (job->claim()) job->deliver(std::move(outcome));
  }
}

}  // namespace s1::runtime
