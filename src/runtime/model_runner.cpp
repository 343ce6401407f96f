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
}  // namespace

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
    if (queue_.size() >= options_.queue_capacity) {
      return api::ApiError::make(api::ErrorCode::overloaded, "The model's queue is full; retry shortly");
    }
    queue_.push_back(job);
  }
  wake_.notify_one();
  return job;
}

void ModelRunner::withdraw(const std::shared_ptr<Job>& job) {
  std::lock_guard lock(mutex_);
  const auto found = std::find(queue_.begin(), queue_.end(), job);
  if (found != queue_.end()) queue_.erase(found);
}

bool ModelRunner::warm_up() {
  set_state(ModelState::warming);
  std::string reason;
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
  if (reason.empty()) return true;
  std::lock_guard lock(mutex_);
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
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    if (job->claimed()) continue;  // its request already gave up
    // Work not started before its deadline is answered 504 without running.
    if (Clock::now() >= job->deadline()) {
      if (job->claim()) {
        JobOutcome outcome;
        outcome.answers = api::ApiError::make(api::ErrorCode::deadline_exceeded, "The request's deadline passed");
        job->deliver(std::move(outcome));
      }
      continue;
    }
    JobOutcome outcome = execute(*job);
    if (job->claim()) job->deliver(std::move(outcome));
  }
}

}  // namespace s1::runtime
