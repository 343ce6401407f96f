#include "decide/answer_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace s1::decide {
namespace {

// The contract's worked values (§5.2): mock-ramp scores sᵢ = −i, T = 1, tolerance 1e-9.
std::vector<double> ramp(size_t n) {
  std::vector<double> scores(n);
  for (size_t i = 0; i < n; ++i) scores[i] = -static_cast<double>(i);
  return scores;
}

constexpr double tolerance = 1e-9;

TEST(AnswerMath, WorkedValues) {
  auto noul = make_answer(api::QuestionType::noul, ramp(2), 1.0, ConfidenceMethod::linear);
  EXPECT_NEAR(noul->probabilities[0], 0.7310585786300049, tolerance);

  auto choice2 = make_answer(api::QuestionType::choice, ramp(2), 1.0, ConfidenceMethod::linear);
  EXPECT_NEAR(choice2->probabilities[1], 0.2689414213699951, tolerance);
  EXPECT_NEAR(choice2->confidence, 0.4621171572600098, tolerance);

  auto choice3 = make_answer(api::QuestionType::choice, ramp(3), 1.0, ConfidenceMethod::linear);
  EXPECT_NEAR(choice3->probabilities[0], 0.6652409557748218, tolerance);
  EXPECT_NEAR(choice3->probabilities[1], 0.24472847105479764, tolerance);
  EXPECT_NEAR(choice3->probabilities[2], 0.09003057317038046, tolerance);
  EXPECT_NEAR(choice3->confidence, 0.4978614336622327, tolerance);

  auto entropy3 = make_answer(api::QuestionType::choice, ramp(3), 1.0, ConfidenceMethod::entropy);
  EXPECT_NEAR(entropy3->confidence, 0.24232088933841778, tolerance);

  auto choice255 = make_answer(api::QuestionType::choice, ramp(255), 1.0, ConfidenceMethod::linear);
  EXPECT_NEAR(choice255->probabilities[0], 0.6321205588285576, tolerance);
  EXPECT_NEAR(choice255->probabilities[254] / 3.0903061910401934e-111, 1.0, 1e-9);
  EXPECT_NEAR(choice255->confidence, 0.6306722145719771, tolerance);

  auto score3 = make_answer(api::QuestionType::score, ramp(3), 1.0, ConfidenceMethod::linear);
  EXPECT_NEAR(score3->score, 0.42478961739555854, tolerance);
  EXPECT_NEAR(score3->confidence, 0.3628155739066622, tolerance);

  auto score10 = make_answer(api::QuestionType::score, ramp(10), 1.0, ConfidenceMethod::linear);
  EXPECT_NEAR(score10->score, 0.5815226869592297, tolerance);
  EXPECT_NEAR(score10->confidence, 0.7673909252163081, tolerance);
}

TEST(AnswerMath, TopMinusMeanConfidence) {
  EXPECT_DOUBLE_EQ(top_minus_mean_confidence(std::vector{1.0}), 1.0);
  EXPECT_NEAR(top_minus_mean_confidence(std::vector{0.7, 0.2, 0.1}), 0.55, 1e-15);
  EXPECT_DOUBLE_EQ(top_minus_mean_confidence(std::vector{0.5, 0.5}), 0.0);
  EXPECT_NEAR(top_minus_mean_confidence(std::vector{0.1, 0.6, 0.3}), 0.4, 1e-15);
  // The method reads choice and score alike (CLM's reference).
  const auto score = make_answer(api::QuestionType::score, std::vector{0.0, 1.0, 0.0}, 1.0, ConfidenceMethod::top_minus_mean);
  ASSERT_TRUE(score);
  EXPECT_DOUBLE_EQ(score->confidence, top_minus_mean_confidence(score->probabilities));
  EXPECT_EQ(confidence_method_name(ConfidenceMethod::top_minus_mean), "top_minus_mean");
}

TEST(AnswerMath, UniformScoresTieToTheFirstOption) {
  const std::vector<double> equal(4, 0.0);
  auto choice = make_answer(api::QuestionType::choice, equal, 1.0, ConfidenceMethod::linear);
  EXPECT_EQ(choice->choice_index, 0U);
  EXPECT_DOUBLE_EQ(choice->confidence, 0.0);
  for (const double p : choice->probabilities) EXPECT_DOUBLE_EQ(p, 0.25);
  auto score = make_answer(api::QuestionType::score, std::vector<double>(3, 0.0), 1.0, ConfidenceMethod::linear);
  EXPECT_NEAR(score->score, 1.0, tolerance);
  EXPECT_NEAR(score->confidence, 0.0, tolerance);
  auto noul = make_answer(api::QuestionType::noul, std::vector<double>(2, 0.0), 1.0, ConfidenceMethod::linear);
  EXPECT_DOUBLE_EQ(noul->probabilities[0], 0.5);
}

TEST(AnswerMath, SingleOptionIsCertain) {
  auto choice = make_answer(api::QuestionType::choice, std::vector<double>{-3.0}, 1.0, ConfidenceMethod::linear);
  EXPECT_DOUBLE_EQ(choice->probabilities[0], 1.0);
  EXPECT_DOUBLE_EQ(choice->confidence, 1.0);
  auto entropy = make_answer(api::QuestionType::choice, std::vector<double>{-3.0}, 1.0, ConfidenceMethod::entropy);
  EXPECT_DOUBLE_EQ(entropy->confidence, 1.0);
}

TEST(AnswerMath, TemperatureScalesScores) {
  auto hot = make_answer(api::QuestionType::noul, std::vector<double>{0.0, -2.0}, 2.0, ConfidenceMethod::linear);
  auto plain = make_answer(api::QuestionType::noul, std::vector<double>{0.0, -1.0}, 1.0, ConfidenceMethod::linear);
  EXPECT_NEAR(hot->probabilities[0], plain->probabilities[0], 1e-15);
}

TEST(AnswerMath, NonFiniteScoresAreInternalErrors) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (const double bad : {nan, inf, -inf}) {
    auto answer = make_answer(api::QuestionType::choice, std::vector<double>{0.0, bad}, 1.0, ConfidenceMethod::linear);
    ASSERT_FALSE(answer.ok());
    EXPECT_EQ(answer.error().code, api::ErrorCode::internal_error);
  }
}

TEST(AnswerMath, ProbabilitiesSumToOne) {
  const std::vector<double> scores = {3.5, -1e3, 7.25, 0.0, 1e-9};
  auto answer = make_answer(api::QuestionType::choice, scores, 0.3, ConfidenceMethod::linear);
  double sum = 0.0;
  for (const double p : answer->probabilities) sum += p;
  EXPECT_NEAR(sum, 1.0, 1e-12);
  EXPECT_EQ(answer->choice_index, 2U);
}

}  // namespace
}  // namespace s1::decide
