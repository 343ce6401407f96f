#include "support/prefix_cache_runs.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "runtime/prefix_cache.h"
#include "support/fixtures.h"

namespace s1::test {
namespace {

struct CachedRun {
  int64_t input_tokens = 0;
  int64_t cached_tokens = 0;
  std::vector<api::Answer> answers;
};

CachedRun run(runtime::Engine& engine, const api::DecisionRequest& request) {
  auto plan = engine.prepare(request, {});
  if (!plan) throw std::runtime_error("prepare: " + plan.error().message);
  auto raw = engine.run(*plan.value());
  if (!raw) throw std::runtime_error("run: " + raw.error().message);
  auto answers = engine.finish(request, *plan.value(), std::move(raw.value()));
  if (!answers) throw std::runtime_error("finish: " + answers.error().message);
  return {plan.value()->input_tokens, plan.value()->cached_tokens, std::move(answers.value())};
}

void expect_same_answers(const std::vector<api::Answer>& actual, const std::vector<api::Answer>& expected,
                         const char* which) {
  ASSERT_EQ(actual.size(), expected.size()) << which;
  for (std::size_t q = 0; q < actual.size(); ++q) {
    EXPECT_EQ(actual[q].probabilities, expected[q].probabilities) << which << ", question " << q;
    EXPECT_EQ(actual[q].confidence, expected[q].confidence) << which << ", question " << q;
    EXPECT_EQ(actual[q].score, expected[q].score) << which << ", question " << q;
    EXPECT_EQ(actual[q].choice_index, expected[q].choice_index) << which << ", question " << q;
  }
}

}  // namespace

std::size_t expect_prefix_cache_changes_nothing(runtime::Engine& plain, runtime::Engine& cached,
                                                const std::filesystem::path& expected_jsonl) {
  std::vector<api::DecisionRequest> requests;
  for (const api::Json& line : read_jsonl(expected_jsonl)) requests.push_back(typed_request(line["request"]));
  return expect_prefix_cache_changes_nothing(plain, cached, requests);
}

std::size_t expect_prefix_cache_changes_nothing(runtime::Engine& plain, runtime::Engine& cached,
                                                const std::vector<api::DecisionRequest>& requests) {
  std::size_t reused = 0;
  for (const api::DecisionRequest& request : requests) {
    const CachedRun alone = run(plain, request);
    runtime::PrefixCache cache(std::size_t{1} << 30);
    EXPECT_TRUE(cached.use_prefix_cache(cache));
    const CachedRun first = run(cached, request);
    EXPECT_EQ(first.cached_tokens, 0);
    expect_same_answers(first.answers, alone.answers, "first cached run");
    const CachedRun second = run(cached, request);
    EXPECT_EQ(second.input_tokens, alone.input_tokens);
    EXPECT_GE(second.cached_tokens, 0);
    EXPECT_LT(second.cached_tokens, second.input_tokens);
    expect_same_answers(second.answers, alone.answers, "second cached run");
    if (second.cached_tokens > 0) ++reused;
  }
  return reused;
}

}  // namespace s1::test
