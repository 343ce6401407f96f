#include "runtime/model_runner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <future>
#include <mutex>
#include <stdexcept>

namespace s1::runtime {
namespace {

using namespace std::chrono_literals;

// An engine whose inference waits until the test releases it, so queue states are exact.
class GatedEngine : public Engine {
 public:
  explicit GatedEngine(bool fail_warm_up = false) : fail_warm_up_(fail_warm_up) {}

  ModelInfo info() const override {
    ModelInfo model;
    model.question_types = {api::QuestionType::noul};
    model.context_tokens = 16;
    return model;
  }
  api::Result<std::unique_ptr<Plan>> prepare(const api::DecisionRequest&, const PrepareLimits&) const override {
    auto plan = std::make_unique<Plan>();
    plan->input_tokens = 1;
    return plan;
  }
  api::Result<RawOutputs> run(Plan&) override {
    if (fail_warm_up_) throw std::runtime_error("broken");
    std::unique_lock lock(mutex_);
    ++started_;
    changed_.notify_all();
    if (warmed_) changed_.wait(lock, [this] { return released_ > 0; });
    if (warmed_) --released_;
    warmed_ = true;
    RawOutputs outputs;
    outputs.label_scores = {{0.0, -1.0}};
    return outputs;
  }
  api::Result<std::vector<api::Answer>> finish(const api::DecisionRequest&, const Plan&, RawOutputs) const override {
    api::Answer answer;
    answer.probabilities = {0.75, 0.25};
    return std::vector<api::Answer>{answer};
  }

  void release_one() {
    std::lock_guard lock(mutex_);
    ++released_;
    changed_.notify_all();
  }
  void wait_started(int count) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return started_ >= count; });
  }

 private:
  bool fail_warm_up_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int started_ = 0;  // includes the warm-up
  int released_ = 0;
  bool warmed_ = false;
};

auto sample_request() {
  auto request = std::make_shared<api::DecisionRequest>();
  request->state = "s";
  return request;
}

void wait_ready(const ModelRunner& runner) {
  for (int i = 0; i < 500 && runner.state() != ModelState::ready && runner.state() != ModelState::failed; ++i) {
    std::this_thread::sleep_for(2ms);
  }
}

struct Submitted {
  api::Result<std::shared_ptr<Job>> job;
  std::future<JobOutcome> outcome;
};

Submitted submit(ModelRunner& runner, Clock::time_point deadline = Clock::now() + 10s) {
  auto promise = std::make_shared<std::promise<JobOutcome>>();
  auto future = promise->get_future();
  auto job = runner.submit(sample_request(), std::make_unique<Plan>(), deadline,
                           [promise](JobOutcome outcome) { promise->set_value(std::move(outcome)); });
  return {std::move(job), std::move(future)};
}

// A started, ready runner over a GatedEngine the test still holds the gate of.
struct GatedRunner {
  explicit GatedRunner(RunnerOptions options) {
    auto owned = std::make_unique<GatedEngine>();
    engine = owned.get();
    runner = std::make_unique<ModelRunner>("m", std::move(owned), options);
    runner->start();
    wait_ready(*runner);
  }
  GatedEngine* engine;
  std::unique_ptr<ModelRunner> runner;
};

// Work that the engine has started and holds until released: the queue is empty again.
Submitted submit_running(GatedRunner& gated) {
  Submitted running = submit(*gated.runner);
  gated.engine->wait_started(2);  // the warm-up and this one
  return running;
}

TEST(ModelRunner, BecomesReadyOnlyAfterWarmUp) {
  auto engine = std::make_unique<GatedEngine>();
  ModelRunner runner("m", std::move(engine), RunnerOptions{2, {}});
  EXPECT_EQ(runner.state(), ModelState::loading);
  auto refused = runner.submit(sample_request(), std::make_unique<Plan>(), Clock::now() + 1s, [](JobOutcome) {});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, api::ErrorCode::model_unavailable);
  runner.start();
  wait_ready(runner);
  EXPECT_EQ(runner.state(), ModelState::ready);
}

TEST(ModelRunner, FailedWarmUpMarksTheModelFailed) {
  ModelRunner runner("m", std::make_unique<GatedEngine>(true), RunnerOptions{2, {}});
  runner.start();
  wait_ready(runner);
  EXPECT_EQ(runner.state(), ModelState::failed);
  EXPECT_EQ(runner.failure_reason(), "warm-up failed");
  auto refused = submit(runner);
  ASSERT_FALSE(refused.job.ok());
  EXPECT_EQ(refused.job.error().code, api::ErrorCode::model_unavailable);
}

TEST(ModelRunner, FullQueueRefusesWithOverloadedAndRecovers) {
  GatedRunner gated(RunnerOptions{1, {}});
  ModelRunner& runner = *gated.runner;
  Submitted running = submit_running(gated);
  Submitted waiting = submit(runner);
  ASSERT_TRUE(waiting.job.ok());
  EXPECT_EQ(runner.queue_depth(), 1U);
  Submitted refused = submit(runner);
  ASSERT_FALSE(refused.job.ok());
  EXPECT_EQ(refused.job.error().code, api::ErrorCode::overloaded);
  EXPECT_EQ(refused.job.error().headers.front().first, "Retry-After");
  EXPECT_EQ(refused.job.error().headers.front().second, "1");  // runs here take microseconds

  gated.engine->release_one();
  EXPECT_TRUE(running.outcome.get().answers.ok());
  gated.engine->release_one();
  EXPECT_TRUE(waiting.outcome.get().answers.ok());
  Submitted later = submit(runner);
  ASSERT_TRUE(later.job.ok());
  gated.engine->release_one();
  const JobOutcome outcome = later.outcome.get();
  EXPECT_TRUE(outcome.answers.ok());
  EXPECT_GE(outcome.inference_seconds, 0.0);
}

// The boundary is exact at every moment: a client that sends its next request as soon as it reads
// the answer (here from the delivery itself, before the executor takes the next job) finds the
// finished run's slot free.
TEST(ModelRunner, QueueNAdmitsNWaitingPlusTheOneRunning) {
  constexpr size_t capacity = 2;
  GatedRunner gated(RunnerOptions{capacity, {}});
  ModelRunner& runner = *gated.runner;
  // Whatever fails, every admitted run is let through, so that the runner stops.
  struct OpenGate {
    GatedEngine* engine;
    ~OpenGate() {
      for (size_t i = 0; i < capacity + 3; ++i) engine->release_one();
    }
  } open_gate{gated.engine};
  std::promise<Submitted> resubmitted;
  auto first = runner.submit(sample_request(), std::make_unique<Plan>(), Clock::now() + 10s,
                             [&](JobOutcome) { resubmitted.set_value(submit(runner)); });
  ASSERT_TRUE(first.ok());
  gated.engine->wait_started(2);
  std::vector<Submitted> waiting;
  for (size_t i = 0; i < capacity; ++i) {
    waiting.push_back(submit(runner));
    ASSERT_TRUE(waiting.back().job.ok()) << "waiting request " << i;
  }
  Submitted beyond = submit(runner);
  ASSERT_FALSE(beyond.job.ok());
  EXPECT_EQ(beyond.job.error().code, api::ErrorCode::overloaded);

  gated.engine->release_one();
  Submitted next = resubmitted.get_future().get();
  ASSERT_TRUE(next.job.ok()) << next.job.error().message;
  gated.engine->wait_started(3);
  EXPECT_EQ(runner.queue_depth(), capacity);
  Submitted again_beyond = submit(runner);
  ASSERT_FALSE(again_beyond.job.ok());
  for (size_t i = 0; i < capacity + 1; ++i) gated.engine->release_one();
  for (auto& work : waiting) EXPECT_TRUE(work.outcome.get().answers.ok());
  EXPECT_TRUE(next.outcome.get().answers.ok());
}

TEST(RetryAfter, IsTheCeilingOfTheRunsRemainingSecondsAndAtLeastOne) {
  EXPECT_EQ(retry_after_seconds(3.0, 0.1), 3);
  EXPECT_EQ(retry_after_seconds(2.0, 0.0), 2);
  EXPECT_EQ(retry_after_seconds(2.01, 0.0), 3);
  EXPECT_EQ(retry_after_seconds(3.0, 2.5), 1);
  EXPECT_EQ(retry_after_seconds(3.0, 4.0), 1);  // overdue: a slot frees any moment
  EXPECT_EQ(retry_after_seconds(0.004, 0.0), 1);
  EXPECT_EQ(retry_after_seconds(0.0, 0.0), 1);  // nothing measured yet
  EXPECT_EQ(retry_after_seconds(std::nan(""), 0.0), 1);
  EXPECT_EQ(retry_after_seconds(1e12, 0.0), 86'400);
}

TEST(ModelRunner, WorkPastItsDeadlineIsAnswered504WithoutRunning) {
  GatedRunner gated(RunnerOptions{4, {}});
  Submitted running = submit_running(gated);
  Submitted late = submit(*gated.runner, Clock::now() + 20ms);
  std::this_thread::sleep_for(40ms);
  gated.engine->release_one();
  EXPECT_TRUE(running.outcome.get().answers.ok());
  const JobOutcome outcome = late.outcome.get();
  ASSERT_FALSE(outcome.answers.ok());
  EXPECT_EQ(outcome.answers.error().code, api::ErrorCode::deadline_exceeded);
}

TEST(ModelRunner, WithdrawnWorkFreesItsSlotAndNeverRuns) {
  GatedRunner gated(RunnerOptions{1, {}});
  ModelRunner& runner = *gated.runner;
  Submitted running = submit_running(gated);
  Submitted abandoned = submit(runner);
  ASSERT_TRUE(abandoned.job.ok());
  ASSERT_TRUE(abandoned.job.value()->claim());  // the client went away
  runner.withdraw(abandoned.job.value());
  EXPECT_EQ(runner.queue_depth(), 0U);
  Submitted next = submit(runner);
  ASSERT_TRUE(next.job.ok());
  gated.engine->release_one();
  gated.engine->release_one();
  EXPECT_TRUE(running.outcome.get().answers.ok());
  EXPECT_TRUE(next.outcome.get().answers.ok());
  EXPECT_EQ(abandoned.outcome.wait_for(0ms), std::future_status::timeout);
}

TEST(ModelRunner, StopAnswersQueuedWork) {
  GatedRunner gated(RunnerOptions{4, {}});
  Submitted running = submit_running(gated);
  Submitted queued = submit(*gated.runner);
  std::thread stopper([&] { gated.runner->stop(); });
  const JobOutcome dropped = queued.outcome.get();
  ASSERT_FALSE(dropped.answers.ok());
  EXPECT_EQ(dropped.answers.error().code, api::ErrorCode::model_unavailable);
  gated.engine->release_one();
  stopper.join();
  EXPECT_TRUE(running.outcome.get().answers.ok());
}

// ---- the batcher ---------------------------------------------------------------------------------

// An engine that takes up to `most` plans per run_batch, records each batch's plan tokens, and
// (gated) holds each batch after the warm-up until the test releases it.
class BatchingEngine : public GatedEngine {
 public:
  BatchingEngine(size_t most, bool gated) : most_(most), gated_(gated) {}
  size_t max_batch_requests() const override { return most_; }
  std::vector<api::Result<RawOutputs>> run_batch(std::span<Plan* const> plans) override {
    std::vector<int64_t> tokens;
    for (const Plan* plan : plans) tokens.push_back(plan->input_tokens);
    {
      std::unique_lock lock(mutex_);
      batches_.push_back(tokens);
      changed_.notify_all();
      if (gated_ && batches_.size() > 1) changed_.wait(lock, [this] { return released_ > 0; });
      if (gated_ && batches_.size() > 1) --released_;
    }
    std::vector<api::Result<RawOutputs>> outputs;
    for (size_t i = 0; i < plans.size(); ++i) outputs.emplace_back(RawOutputs{{{0.0, -1.0}}});
    return outputs;
  }
  void release(int count) {
    std::lock_guard lock(mutex_);
    released_ += count;
    changed_.notify_all();
  }
  // Blocks until `count` batches (the warm-up's included) have started.
  std::vector<std::vector<int64_t>> wait_batches(size_t count) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return batches_.size() >= count; });
    return batches_;
  }

 private:
  size_t most_;
  bool gated_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::vector<int64_t>> batches_;
  int released_ = 0;
};

struct BatchingRunner {
  BatchingRunner(BatchLimits limits, size_t most = 64, bool gated = true, size_t queue = 32) {
    auto owned = std::make_unique<BatchingEngine>(most, gated);
    engine = owned.get();
    runner = std::make_unique<ModelRunner>("m", std::move(owned), RunnerOptions{queue, limits});
    runner->start();
    wait_ready(*runner);
  }
  ~BatchingRunner() { engine->release(1000); }
  BatchingEngine* engine;
  std::unique_ptr<ModelRunner> runner;
};

Submitted submit_tokens(ModelRunner& runner, int64_t tokens) {
  auto promise = std::make_shared<std::promise<JobOutcome>>();
  auto future = promise->get_future();
  auto plan = std::make_unique<Plan>();
  plan->input_tokens = tokens;
  auto job = runner.submit(sample_request(), std::move(plan), Clock::now() + 60s,
                           [promise](JobOutcome outcome) { promise->set_value(std::move(outcome)); });
  return {std::move(job), std::move(future)};
}

BatchLimits limits(size_t max_requests, int64_t max_tokens, std::chrono::microseconds max_wait) {
  BatchLimits batch;
  batch.max_requests = max_requests;
  batch.max_tokens = max_tokens;
  batch.max_wait = max_wait;
  return batch;
}

using Batches = std::vector<std::vector<int64_t>>;

// A queue of N admits N waiting beside a running batch of any size, and every client of a batch that
// just ended finds its slot free when it sends its next request on reading its answer (here from the
// delivery itself, before the executor gathers again): exactly N more, never N + 1.
TEST(Batcher, QueueNAdmitsNWaitingPlusTheBatchRunning) {
  constexpr size_t queue = 2;
  constexpr size_t most = 4;
  BatchingRunner batching(limits(most, 8192, 0us), most, /*gated=*/true, queue);
  ModelRunner& runner = *batching.runner;
  std::mutex mutex;
  std::vector<Submitted> resubmitted;
  // A request whose client sends one more (which does not resubmit) as soon as it is answered.
  const auto submit_resubmitting = [&] {
    return runner.submit(sample_request(), std::make_unique<Plan>(), Clock::now() + 60s, [&](JobOutcome) {
      Submitted next = submit(runner, Clock::now() + 60s);
      const std::lock_guard lock(mutex);
      resubmitted.push_back(std::move(next));
    });
  };
  ASSERT_TRUE(submit_resubmitting().ok());
  batching.engine->wait_batches(2);  // the warm-up's and this one
  // One running: N waiting, then refused.
  for (size_t i = 0; i < queue; ++i) ASSERT_TRUE(submit_resubmitting().ok()) << "waiting request " << i;
  auto beyond = submit(runner);
  ASSERT_FALSE(beyond.job.ok());
  EXPECT_EQ(beyond.job.error().code, api::ErrorCode::overloaded);

  // The first ends; its client's next request joins the two waiting, and the three run as one batch.
  batching.engine->release(1);
  EXPECT_EQ(batching.engine->wait_batches(3).back().size(), queue + 1);
  // Three running: still N waiting, then refused.
  std::vector<Submitted> waiting;
  for (size_t i = 0; i < queue; ++i) {
    waiting.push_back(submit(runner));
    ASSERT_TRUE(waiting.back().job.ok()) << "waiting beside the batch, " << i;
  }
  beyond = submit(runner);
  ASSERT_FALSE(beyond.job.ok());
  EXPECT_EQ(beyond.job.error().code, api::ErrorCode::overloaded);

  // The batch of three ends: its two resubmitting clients' next requests are admitted beside the two
  // waiting (N + 2 between batches), and the next batch takes all four.
  batching.engine->release(1);
  const Batches batches = batching.engine->wait_batches(4);
  EXPECT_EQ(batches.back().size(), most);
  {
    const std::lock_guard lock(mutex);
    ASSERT_EQ(resubmitted.size(), queue + 1);
    for (const Submitted& next : resubmitted) EXPECT_TRUE(next.job.ok()) << next.job.error().message;
  }
  EXPECT_EQ(runner.queue_depth(), 0U);
  // Four running: N waiting, then refused.
  for (size_t i = 0; i < queue; ++i) {
    waiting.push_back(submit(runner));
    ASSERT_TRUE(waiting.back().job.ok()) << "waiting beside the batch of four, " << i;
  }
  beyond = submit(runner);
  ASSERT_FALSE(beyond.job.ok());
  EXPECT_EQ(beyond.job.error().code, api::ErrorCode::overloaded);
  batching.engine->release(2);
  for (auto& work : waiting) EXPECT_TRUE(work.outcome.get().answers.ok());
}

TEST(Batcher, AnIdleExecutorStartsAtOnceWhateverTheMaxWait) {
  BatchingRunner batching(limits(16, 8192, 60s), 64, /*gated=*/false);
  for (int i = 0; i < 3; ++i) {
    Submitted alone = submit_tokens(*batching.runner, 5);
    ASSERT_TRUE(alone.job.ok());
    ASSERT_EQ(alone.outcome.wait_for(5s), std::future_status::ready) << "request " << i << " waited";
    const JobOutcome outcome = alone.outcome.get();
    EXPECT_TRUE(outcome.answers.ok());
    EXPECT_LT(outcome.queue_seconds, 1.0);
  }
  EXPECT_EQ(batching.engine->wait_batches(4), (Batches{{1}, {5}, {5}, {5}}));  // the warm-up's plan first
}

// The batches that requests of `tokens`, queued while a one-token request runs, are run in; the
// warm-up's and the running request's first. Waits until `count` batches have run.
Batches batches_of_queued(BatchLimits batch, size_t engine_most, const std::vector<int64_t>& tokens, size_t count) {
  BatchingRunner batching(batch, engine_most);
  Submitted running = submit_tokens(*batching.runner, 1);
  batching.engine->wait_batches(2);
  std::vector<Submitted> waiting;
  for (const int64_t each : tokens) waiting.push_back(submit_tokens(*batching.runner, each));
  batching.engine->release(static_cast<int>(count) - 1);
  const Batches batches = batching.engine->wait_batches(count);
  EXPECT_TRUE(running.outcome.get().answers.ok());
  for (auto& work : waiting) EXPECT_TRUE(work.outcome.get().answers.ok());
  return batches;
}

TEST(Batcher, TheNextBatchGathersWhileOneRuns) {
  EXPECT_EQ(batches_of_queued(limits(16, 8192, 0us), 64, {2, 3, 4}, 3), (Batches{{1}, {1}, {2, 3, 4}}));
}

TEST(Batcher, MaxRequestsBoundsABatchAndSoDoesTheEngine) {
  EXPECT_EQ(batches_of_queued(limits(2, 8192, 0us), 64, {2, 3, 4}, 4), (Batches{{1}, {1}, {2, 3}, {4}}));
  EXPECT_EQ(batches_of_queued(limits(16, 8192, 0us), 2, {2, 3, 4}, 4), (Batches{{1}, {1}, {2, 3}, {4}}));
}

TEST(Batcher, MaxTokensBoundsABatchAndALongerRequestRunsAlone) {
  // In arrival order: the 20-token request closes {1} rather than letting 3 overtake it.
  EXPECT_EQ(batches_of_queued(limits(16, 10, 0us), 64, {4, 6, 1, 20, 3}, 6),
            (Batches{{1}, {1}, {4, 6}, {1}, {20}, {3}}));
}

TEST(Batcher, AfterABatchAnIdleExecutorWaitsAtMostMaxWaitForAsManyAgain) {
  BatchingRunner batching(limits(16, 8192, 150ms));
  Submitted running = submit_tokens(*batching.runner, 1);
  batching.engine->wait_batches(2);
  std::vector<Submitted> group;
  for (int64_t tokens : {2, 2, 2}) group.push_back(submit_tokens(*batching.runner, tokens));
  batching.engine->release(1000);  // no gate from here on
  for (auto& work : group) EXPECT_TRUE(work.outcome.get().answers.ok());
  ASSERT_EQ(batching.engine->wait_batches(3).back().size(), 3U);

  // The previous batch had three: the next request waits for two more, then no longer than max_wait.
  Submitted alone = submit_tokens(*batching.runner, 7);
  const JobOutcome waited = alone.outcome.get();
  EXPECT_GE(waited.queue_seconds, 0.14);
  EXPECT_LT(waited.queue_seconds, 5.0);
  EXPECT_EQ(batching.engine->wait_batches(4).back(), (std::vector<int64_t>{7}));

  // The previous batch had one: the next starts at once.
  Submitted next = submit_tokens(*batching.runner, 8);
  EXPECT_LT(next.outcome.get().queue_seconds, 0.14);
}

TEST(Batcher, AGroupAsLargeAsThePreviousBatchStartsWithoutWaitingMaxWait) {
  BatchingRunner batching(limits(16, 8192, 60s));
  Submitted running = submit_tokens(*batching.runner, 1);
  batching.engine->wait_batches(2);
  std::vector<Submitted> group;
  for (int64_t tokens : {2, 2}) group.push_back(submit_tokens(*batching.runner, tokens));
  batching.engine->release(1000);
  for (auto& work : group) EXPECT_TRUE(work.outcome.get().answers.ok());
  std::vector<Submitted> again;
  for (int64_t tokens : {3, 3}) again.push_back(submit_tokens(*batching.runner, tokens));
  for (auto& work : again) {
    ASSERT_EQ(work.outcome.wait_for(10s), std::future_status::ready);
    EXPECT_TRUE(work.outcome.get().answers.ok());
  }
  EXPECT_EQ(batching.engine->wait_batches(4).back(), (std::vector<int64_t>{3, 3}));
}

}  // namespace
}  // namespace s1::runtime
