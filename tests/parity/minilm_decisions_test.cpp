// The embedding-similarity contract against its Python reference (tools/reference/
// embedding_contract.py) on the committed decisions and zero-shot fixtures. Gates, declared before
// comparing: candidate texts, token counts and input_tokens exact; similarities 1e-5; probabilities,
// confidence and score 1e-4 (fp32); the choice equal unless the reference's top two probabilities
// are within 1e-3; zero-shot accuracy equal to the reference's 45/54 (±1 item).

#include "minilm_fixtures.h"

#include "api/request.h"
#include "backend/cpu/linear.h"
#include "decide/contract_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace s1::parity {
namespace {

using decide::LoadedModel;

api::DecisionRequest parse(const OrderedJson& request) {
  auto parsed = api::parse_system_one_request(request.dump(), api::RequestLimits{64, true, false});
  EXPECT_TRUE(parsed.ok()) << request.dump();
  return parsed.ok() ? std::move(parsed.value()) : api::DecisionRequest{};
}

struct Decision {
  int64_t input_tokens = 0;
  std::vector<std::vector<double>> similarities;
  std::vector<api::Answer> answers;
};

Decision decide_with(runtime::Engine& engine, const api::DecisionRequest& request, int64_t budget = 65536) {
  Decision decision;
  auto plan = engine.prepare(request, runtime::PrepareLimits{budget});
  EXPECT_TRUE(plan.ok()) << (plan.ok() ? "" : plan.error().message);
  if (!plan.ok()) return decision;
  decision.input_tokens = (*plan)->input_tokens;
  auto outputs = engine.run(**plan);
  EXPECT_TRUE(outputs.ok());
  if (!outputs.ok()) return decision;
  decision.similarities = outputs->label_scores;
  auto answers = engine.finish(request, **plan, std::move(outputs.value()));
  EXPECT_TRUE(answers.ok());
  if (answers.ok()) decision.answers = std::move(answers.value());
  return decision;
}

// The reference answer's probabilities in label order.
std::vector<double> reference_probabilities(const OrderedJson& answer, const api::Question& question) {
  if (question.type == api::QuestionType::noul) {
    const double p = answer.at("noul").get<double>();
    return {p, 1.0 - p};
  }
  std::vector<double> p;
  for (const auto& [label, value] : answer.at("probabilities").items()) p.push_back(value.get<double>());
  return p;
}

struct Drift {
  double probability = 0.0;
  double similarity = 0.0;
  size_t decisions = 0;
  size_t decision_mismatches = 0;  // top choice differs where the reference margin is ≥ 0.05
};

// Compares one fixture line; `tolerance` gates probabilities, confidence and score (0 = report only).
Drift compare_decision(runtime::Engine& engine, const OrderedJson& line, double tolerance, double similarity_tolerance) {
  Drift drift;
  const std::string id = line.at("id").get<std::string>();
  const api::DecisionRequest request = parse(line.at("request"));
  const Decision got = decide_with(engine, request);
  EXPECT_EQ(got.input_tokens, line.at("input_tokens").get<int64_t>()) << id;
  if (got.answers.size() != request.questions.size()) {
    ADD_FAILURE() << id << ": no answers";
    return drift;
  }
  for (size_t q = 0; q < request.questions.size(); ++q) {
    const api::Question& question = request.questions[q];
    const OrderedJson& expected_question = line.at("questions").at(question.key);
    EXPECT_EQ(decide::candidate_texts(question), expected_question.at("candidates").get<std::vector<std::string>>())
        << id << "/" << question.key;
    const auto similarities = expected_question.at("similarities").get<std::vector<double>>();
    for (size_t i = 0; i < similarities.size() && i < got.similarities[q].size(); ++i) {
      const double diff = std::abs(got.similarities[q][i] - similarities[i]);
      drift.similarity = std::max(drift.similarity, diff);
      if (similarity_tolerance > 0) {
        EXPECT_LE(diff, similarity_tolerance) << id << "/" << question.key << " label " << i;
      }
    }
    const OrderedJson& expected = line.at("answers").at(question.key);
    const std::vector<double> p = reference_probabilities(expected, question);
    const api::Answer& answer = got.answers[q];
    if (answer.probabilities.size() != p.size()) {
      ADD_FAILURE() << id << ": " << answer.probabilities.size() << " probabilities";
      continue;
    }
    for (size_t i = 0; i < p.size(); ++i) {
      const double diff = std::abs(answer.probabilities[i] - p[i]);
      drift.probability = std::max(drift.probability, diff);
      if (tolerance > 0) {
        EXPECT_LE(diff, tolerance) << id << "/" << question.key << " label " << i;
      }
    }
    if (question.type == api::QuestionType::noul) continue;
    if (tolerance > 0) {
      EXPECT_NEAR(answer.confidence, expected.at("confidence").get<double>(), tolerance) << id;
    }
    if (question.type == api::QuestionType::score) {
      if (tolerance > 0) {
        EXPECT_NEAR(answer.score, expected.at("score").get<double>(), tolerance) << id;
      }
      continue;
    }
    std::vector<double> sorted = p;
    std::sort(sorted.rbegin(), sorted.rend());
    const double margin = sorted.size() > 1 ? sorted[0] - sorted[1] : 1.0;
    const std::string expected_choice = expected.at("choice").get<std::string>();
    const bool same = question.options[answer.choice_index].name == expected_choice;
    if (margin >= 0.05) {
      ++drift.decisions;
      if (!same) ++drift.decision_mismatches;
    }
    // An exact tie (identical candidate texts) must go to the first option in either precision.
    if (margin == 0.0 || (tolerance > 0 && margin >= 1e-3)) {
      EXPECT_TRUE(same) << id << ": " << expected_choice;
    }
  }
  return drift;
}

class MiniLmDecisions : public ::testing::Test {
 protected:
  static runtime::Engine& fp32() {
    // Through the contract table: "minilm" resolves to the installed directory and its s1serve.json.
    static LoadedModel model = [] {
      model_dir_or_fail();
      return decide::load_model("minilm");
    }();
    return *model.engine;
  }
  static std::vector<OrderedJson>& decisions() {
    static std::vector<OrderedJson> lines = read_jsonl(fixture_dir() / "decisions.jsonl");
    return lines;
  }
};

TEST_F(MiniLmDecisions, TheDefaultModelLoadsByNameWithItsDecisionFile) {
  model_dir_or_fail();
  const LoadedModel model = decide::load_model("all-minilm-l6-v2");
  EXPECT_EQ(model.name, "minilm");
  EXPECT_EQ(model.aliases, std::vector<std::string>{"all-minilm-l6-v2"});
  const runtime::ModelInfo info = model.engine->info();
  EXPECT_EQ(info.context_tokens, 256);
  EXPECT_EQ(info.question_types.size(), 3U);
  EXPECT_FALSE(info.test_backend);
}

TEST_F(MiniLmDecisions, Fp32MatchesThePythonReference) {
  ASSERT_GE(decisions().size(), 38U);
  Drift worst;
  for (const OrderedJson& line : decisions()) {
    const Drift drift = compare_decision(fp32(), line, 1e-4, 1e-5);
    worst.probability = std::max(worst.probability, drift.probability);
    worst.similarity = std::max(worst.similarity, drift.similarity);
  }
  std::printf("fp32: max |Δp| %.3g, max |Δcos| %.3g over %zu requests\n", worst.probability, worst.similarity,
              decisions().size());
}

TEST_F(MiniLmDecisions, RepeatedRequestsHitTheCandidateCacheWithTheSameAnswers) {
  for (size_t n = 0; n < 12; ++n) {
    const OrderedJson& line = decisions()[n];
    const api::DecisionRequest request = parse(line.at("request"));
    const Decision first = decide_with(fp32(), request);
    const Decision second = decide_with(fp32(), request);
    ASSERT_EQ(first.answers.size(), second.answers.size());
    EXPECT_EQ(first.input_tokens, second.input_tokens);
    for (size_t q = 0; q < first.answers.size(); ++q) {
      for (size_t i = 0; i < first.answers[q].probabilities.size(); ++i) {
        EXPECT_NEAR(first.answers[q].probabilities[i], second.answers[q].probabilities[i], 1e-6)
            << line.at("id").get<std::string>();
      }
    }
  }
}

TEST_F(MiniLmDecisions, ACacheSmallerThanOneRequestStillAnswersCorrectly) {
  decide::EmbeddingSimilaritySettings settings;
  settings.name = "minilm-tiny-cache";
  settings.candidate_cache_entries = 2;
  auto engine = decide::make_embedding_similarity_engine(model_dir_or_fail(), settings);
  size_t checked = 0;
  for (const OrderedJson& line : decisions()) {
    if (checked == 12) break;  // keep it quick
    compare_decision(*engine, line, 1e-4, 1e-5);
    compare_decision(*engine, line, 1e-4, 1e-5);
    ++checked;
  }
  EXPECT_GE(checked, 10U);
}

TEST_F(MiniLmDecisions, TheRequestTokenBudgetAppliesToInputTokens) {
  const OrderedJson& line = decisions().front();
  const api::DecisionRequest request = parse(line.at("request"));
  const int64_t tokens = line.at("input_tokens").get<int64_t>();
  EXPECT_TRUE(fp32().prepare(request, runtime::PrepareLimits{tokens}).ok());
  auto refused = fp32().prepare(request, runtime::PrepareLimits{tokens - 1});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, api::ErrorCode::max_tokens_exceeded);
}

TEST_F(MiniLmDecisions, Bf16DriftIsMeasuredAndDecisionsHold) {
  if (!backend::cpu::linear_supported(backend::cpu::Precision::bf16)) GTEST_SKIP() << "no AVX-512 on this CPU";
  decide::EmbeddingSimilaritySettings settings;
  settings.name = "minilm-bf16";
  settings.precision = backend::cpu::Precision::bf16;
  auto engine = decide::make_embedding_similarity_engine(model_dir_or_fail(), settings);
  Drift worst;
  for (const OrderedJson& line : decisions()) {
    const Drift drift = compare_decision(*engine, line, 0.0, 0.0);
    worst.probability = std::max(worst.probability, drift.probability);
    worst.similarity = std::max(worst.similarity, drift.similarity);
    worst.decisions += drift.decisions;
    worst.decision_mismatches += drift.decision_mismatches;
  }
  std::printf("bf16: max |Δp| %.3g, max |Δcos| %.3g, choices differing at margin >= 0.05: %zu of %zu\n",
              worst.probability, worst.similarity, worst.decision_mismatches, worst.decisions);
  // bf16 is opt-in (docs/models.md); its gate is the embedding gate's consequence at scale 20.
  EXPECT_LE(worst.similarity, 2e-3);
  EXPECT_EQ(worst.decision_mismatches, 0U);
}

// Correct: choice == expected; noul (p > 0.5) == expected; score round(score) == expected.
bool correct(const api::Question& question, const api::Answer& answer, const OrderedJson& expected) {
  switch (question.type) {
    case api::QuestionType::choice:
      return question.options[answer.choice_index].name == expected.get<std::string>();
    case api::QuestionType::noul:
      return (answer.probabilities[0] > 0.5) == expected.get<bool>();
    case api::QuestionType::score:
      return static_cast<int64_t>(std::nearbyint(answer.score)) == expected.get<int64_t>();
  }
  return false;
}

TEST_F(MiniLmDecisions, ZeroShotAccuracyEqualsTheReference) {
  const std::vector<OrderedJson> items = read_jsonl(fixture_dir() / "zeroshot.jsonl");
  ASSERT_GE(items.size(), 50U);
  size_t ours = 0, reference = 0, agree = 0;
  std::map<std::string, std::pair<size_t, size_t>> per_type;
  for (const OrderedJson& item : items) {
    const api::DecisionRequest request = parse(item.at("request"));
    const Decision got = decide_with(fp32(), request);
    ASSERT_EQ(got.answers.size(), 1U);
    const bool ok = correct(request.questions[0], got.answers[0], item.at("expected").at("q"));
    const bool reference_ok = item.at("reference_correct").at("q").get<bool>();
    ours += ok ? 1 : 0;
    reference += reference_ok ? 1 : 0;
    agree += ok == reference_ok ? 1 : 0;
    auto& [correct_count, total] = per_type[std::string(api::question_type_name(request.questions[0].type))];
    correct_count += ok ? 1 : 0;
    ++total;
  }
  for (const auto& [type, counts] : per_type) std::printf("zero-shot %s: %zu / %zu\n", type.c_str(), counts.first, counts.second);
  std::printf("zero-shot overall: %zu / %zu (reference %zu / %zu), same correctness on %zu items\n", ours,
              items.size(), reference, items.size(), agree);
  EXPECT_EQ(reference, 45U) << "the fixture's recorded reference accuracy changed: update docs/models.md";
  EXPECT_LE(ours, reference + 1);
  EXPECT_GE(ours + 1, reference);
}

}  // namespace
}  // namespace s1::parity
