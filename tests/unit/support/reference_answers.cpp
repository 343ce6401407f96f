#include "reference_answers.h"

#include <gtest/gtest.h>

#include "support/engine_runs.h"
#include "support/fixtures.h"

namespace s1::test {

void expect_answers_match(const api::DecisionRequest& request, const std::vector<api::Answer>& answers,
                          const api::Json& expected, double tolerance) {
  ASSERT_EQ(answers.size(), request.questions.size());
  for (std::size_t q = 0; q < request.questions.size(); ++q) {
    const api::Question& question = request.questions[q];
    const api::Json& reference = expected.at(question.key);
    const api::Answer& got = answers[q];
    if (question.type == api::QuestionType::noul) {
      EXPECT_NEAR(got.probabilities.at(0), reference["noul"].get<double>(), tolerance) << question.key;
      continue;
    }
    if (question.type == api::QuestionType::choice) {
      EXPECT_EQ(question.options.at(got.choice_index).name, reference["choice"].get<std::string>()) << question.key;
    } else {
      EXPECT_NEAR(got.score, reference["score"].get<double>(), tolerance) << question.key;
    }
    EXPECT_NEAR(got.confidence, reference["confidence"].get<double>(), tolerance) << question.key;
    std::size_t i = 0;
    for (const auto& [name, p] : reference["probabilities"].items()) {
      EXPECT_NEAR(got.probabilities.at(i++), p.get<double>(), tolerance) << question.key << "/" << name;
    }
  }
}

std::size_t expect_reference_answers(runtime::Engine& engine, const std::filesystem::path& expected_jsonl,
                                     double tolerance) {
  std::size_t questions = 0;
  for (const api::Json& line : read_jsonl(expected_jsonl)) {
    const api::DecisionRequest request = typed_request(line["request"]);
    const auto [input_tokens, answers] = run_engine(engine, request);
    EXPECT_EQ(input_tokens, line["input_tokens"].get<int64_t>());
    expect_answers_match(request, answers, line["answers"], tolerance);
    questions += request.questions.size();
  }
  return questions;
}

}  // namespace s1::test
