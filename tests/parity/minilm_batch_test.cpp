// The embedding-similarity contract batched: several requests in one run_batch (one encoder call)
// answer as each alone. Gate, declared before comparing (fp32): every probability within 1e-6 and
// the same decision, for requests of different lengths in one batch, with and without the
// candidate cache.

#include <cmath>
#include <memory>

#include "api/request.h"
#include "minilm_fixtures.h"

namespace s1::parity {
namespace {

struct Prepared {
  api::DecisionRequest request;
  std::unique_ptr<runtime::Plan> plan;
};

std::vector<Prepared> prepare_all(const runtime::Engine& engine) {
  // Recorded under contract v1: its empty nouls replay, as in the other fixture tests.
  const api::RequestLimits replay_limits{.max_questions = 64, .has_default_model = true, .refuse_empty_noul = false};
  std::vector<Prepared> prepared;
  for (const OrderedJson& line : read_jsonl(fixture_dir() / "decisions.jsonl")) {
    auto request = api::parse_system_one_request(line.at("request").dump(), replay_limits);
    EXPECT_TRUE(request.ok()) << line.at("id");
    if (!request.ok()) continue;
    auto plan = engine.prepare(request.value(), runtime::PrepareLimits{});
    EXPECT_TRUE(plan.ok()) << line.at("id");
    if (!plan.ok()) continue;
    prepared.push_back({std::move(request.value()), std::move(plan.value())});
  }
  return prepared;
}

std::vector<api::Answer> finished(runtime::Engine& engine, const Prepared& item,
                                  api::Result<runtime::RawOutputs> outputs) {
  EXPECT_TRUE(outputs.ok());
  if (!outputs.ok()) return {};
  auto answers = engine.finish(item.request, *item.plan, std::move(outputs.value()));
  EXPECT_TRUE(answers.ok());
  return answers.ok() ? std::move(answers.value()) : std::vector<api::Answer>{};
}

void expect_same(const std::vector<api::Answer>& batched, const std::vector<api::Answer>& alone, size_t item) {
  ASSERT_EQ(batched.size(), alone.size()) << "item " << item;
  for (size_t q = 0; q < alone.size(); ++q) {
    ASSERT_EQ(batched[q].probabilities.size(), alone[q].probabilities.size()) << "item " << item;
    for (size_t i = 0; i < alone[q].probabilities.size(); ++i) {
      EXPECT_NEAR(batched[q].probabilities[i], alone[q].probabilities[i], 1e-6) << "item " << item << " q " << q;
    }
    EXPECT_EQ(batched[q].choice_index, alone[q].choice_index) << "item " << item << " q " << q;
    EXPECT_EQ(batched[q].probabilities.front() > 0.5, alone[q].probabilities.front() > 0.5);
    EXPECT_NEAR(batched[q].score, alone[q].score, 1e-6);
  }
}

// Each fixture request alone (an engine without a cache), then batches of several in one run_batch
// on another engine: all of them at once, and groups of five (states of 2 to 256 tokens). Without a
// cache, candidates repeated across the batch's requests are embedded once; with a cache smaller
// than one batch, the batch's own evictions cannot take its embeddings away, and the second round
// reads some from the cache.
TEST(MiniLmBatch, BatchedRequestsAnswerAsEachAlone) {
  decide::EmbeddingSimilaritySettings settings;
  settings.name = "minilm";
  settings.candidate_cache_entries = 0;
  auto alone_engine = decide::make_embedding_similarity_engine(model_dir_or_fail(), settings);
  std::vector<Prepared> items = prepare_all(*alone_engine);
  ASSERT_GE(items.size(), 30U);
  std::vector<std::vector<api::Answer>> alone;
  for (const Prepared& item : items) alone.push_back(finished(*alone_engine, item, alone_engine->run(*item.plan)));

  for (const size_t cache_entries : {0, 3}) {
    settings.candidate_cache_entries = cache_entries;
    auto batch_engine = decide::make_embedding_similarity_engine(model_dir_or_fail(), settings);
    ASSERT_GT(batch_engine->max_batch_requests(), 16U);
    for (const size_t group : {items.size(), size_t{5}}) {
      for (size_t first = 0; first < items.size(); first += group) {
        std::vector<runtime::Plan*> plans;
        for (size_t i = first; i < std::min(items.size(), first + group); ++i) plans.push_back(items[i].plan.get());
        auto outputs = batch_engine->run_batch(plans);
        ASSERT_EQ(outputs.size(), plans.size());
        for (size_t k = 0; k < plans.size(); ++k) {
          SCOPED_TRACE("cache " + std::to_string(cache_entries) + ", group " + std::to_string(group));
          expect_same(finished(*batch_engine, items[first + k], std::move(outputs[k])), alone[first + k], first + k);
        }
      }
    }
  }
}

}  // namespace
}  // namespace s1::parity
