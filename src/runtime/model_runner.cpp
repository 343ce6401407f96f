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
      observer_(std::move(observer)) {
  if (options_.prefix_cache_bytes > 0) {
    prefix_cache_ = std::make_unique<PrefixCache>(options_.prefix_cache_bytes);
    if (!engine_->use_prefix_cache(*prefix_cache_)) prefix_cache_.reset();
  }
}

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
    // N waiting beyond the batch running; between batches, beyond the next one, which the executor
    // takes at once: the clients of a batch that just ended resubmit before it gathers again, and
    // each of their slots was free (a queue of N admits N waiting plus however many a batch runs).
    const size_t next_batch = running_ ? 0 : batch_requests();
    if (queue_.size() >= options_.queue_capacity + next_batch) return overloaded();
    queue_.push_back(job);
  }
  wake_.notify_one();
  return job;
}

size_t ModelRunner::batch_requests() const {
  return std::max<size_t>(1, std::min(options_.batch.max_requests, engine_->max_batch_requests()));
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
    } else {
      // Through run_batch, the path every request takes.
      Plan* const plans[] = {plan->get()};
      auto outputs = engine_->run_batch(plans);
      if (outputs.size() != 1 || !outputs.front()) {
        reason = "warm-up inference failed";
      } else if (auto answers = engine_->finish(request, **plan, std::move(outputs.front().value())); !answers) {
        reason = "warm-up produced non-finite probabilities";
      }
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

std::vector<std::shared_ptr<Job>> ModelRunner::gather(std::unique_lock<std::mutex>& lock,
                                                      std::vector<std::shared_ptr<Job>>& late) {
  const BatchLimits& limits = options_.batch;
  const size_t most = batch_requests();
  const size_t expected = std::min(most, last_batch_size_);
  const Clock::time_point closes = queue_.front()->enqueued_at() + limits.max_wait;
  while (!stopping_ && queue_.size() < expected && wake_.wait_until(lock, closes) != std::cv_status::timeout) {
  }
  std::vector<std::shared_ptr<Job>> batch;
  int64_t tokens = 0;
  const Clock::time_point now = Clock::now();
  while (!stopping_ && !queue_.empty() && batch.size() < most) {
    const std::shared_ptr<Job>& job = queue_.front();
    if (job->claimed()) {  // its request already gave up
      queue_.pop_front();
      continue;
    }
    if (now >= job->deadline()) {
      late.push_back(job);
      queue_.pop_front();
      continue;
    }
    // In arrival order: a long request closes the batch rather than letting later ones overtake it.
    const int64_t job_tokens = job->plan().input_tokens;
    if (!batch.empty() && tokens + job_tokens > limits.max_tokens) break;
    tokens += job_tokens;
    batch.push_back(job);
    queue_.pop_front();
  }
  if (!batch.empty()) {
    running_ = true;
    run_started_ = now;
    last_batch_size_ = batch.size();
    if (observer_.on_batch) observer_.on_batch(batch.size(), tokens);
  }
  return batch;
}

std::vector<JobOutcome> ModelRunner::execute(const std::vector<std::shared_ptr<Job>>& batch) {
  std::vector<JobOutcome> outcomes(batch.size());
  const Clock::time_point started = Clock::now();
  std::vector<Plan*> plans;
  for (const auto& job : batch) plans.push_back(&job->plan());
  std::vector<api::Result<RawOutputs>> outputs;
  try {
    outputs = engine_->run_batch(plans);
  } catch (const std::exception&) {
    outputs.clear();
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    JobOutcome& outcome = outcomes[i];
    outcome.queue_seconds = seconds_between(batch[i]->enqueued_at(), started);
    outcome.cached_tokens = batch[i]->plan().cached_tokens;
    if (outputs.size() != batch.size()) {
      outcome.answers = api::ApiError::make(api::ErrorCode::internal_error, "Inference failed");
    } else if (!outputs[i]) {
      outcome.answers = std::move(outputs[i].error());
    } else {
      try {
        outcome.answers = engine_->finish(batch[i]->request(), batch[i]->plan(), std::move(outputs[i].value()));
      } catch (const std::exception&) {
        outcome.answers = api::ApiError::make(api::ErrorCode::internal_error, "Inference failed");
      }
    }
  }
  // Every request of a batch spent the batch's time in inference.
  const double inference_seconds = seconds_between(started, Clock::now());
  for (JobOutcome& outcome : outcomes) {
    outcome.inference_seconds = inference_seconds;
    if (observer_.on_inference) observer_.on_inference(outcome.queue_seconds, outcome.inference_seconds);
  }
  return outcomes;
}

void ModelRunner::executor_loop() {
  if (!warm_up()) {
    set_state(ModelState::failed);
    return;
  }
  set_state(ModelState::ready);
  while (true) {
    std::vector<std::shared_ptr<Job>> batch;
    std::vector<std::shared_ptr<Job>> late;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      batch = gather(lock, late);
    }
    // Work not started before its deadline is answered 504 without running.
    for (const auto& job : late) {
      if (job->claim()) {
        JobOutcome outcome;
        outcome.answers = api::ApiError::make(api::ErrorCode::deadline_exceeded, "The request's deadline passed");
        job->deliver(std::move(outcome));
      }
    }
    if (batch.empty()) continue;
    std::vector<JobOutcome> outcomes = execute(batch);
    {
      // Before the answers go out: a client that sends its next request on reading one finds the
      // slot free (queue N admits N waiting plus the batch running, never fewer).
      std::lock_guard lock(mutex_);
      run_ended(outcomes.front().inference_seconds);
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      if (batch[i]->claim()) batch[i]->deliver(std::move(outcomes[i]));
    }
  }
}

}  // namespace s1::runtime
