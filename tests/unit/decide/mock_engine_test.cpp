#include "decide/contracts/mock.h"

#include <gtest/gtest.h>

namespace s1::decide {
namespace {

api::DecisionRequest request_with(std::string state, std::vector<api::Question> questions) {
  api::DecisionRequest request;
  request.state = std::move(state);
  request.questions = std::move(questions);
  return request;
}

api::Question noul_question() {
  api::Question question;
  question.key = "q";
  question.type = api::QuestionType::noul;
  question.instructions = "Refund?";
  return question;
}

TEST(MockEngine, SharesTheStatePrefixInTokenCounts) {
  auto engine = make_mock_engine("ramp");
  const std::string state(1000, 'x');
  auto one = engine->prepare(request_with(state, {noul_question()}), {});
  auto two = engine->prepare(request_with(state, {noul_question(), noul_question()}), {});
  ASSERT_TRUE(one.ok());
  ASSERT_TRUE(two.ok());
  EXPECT_LT((*two)->input_tokens, 2 * (*one)->input_tokens - 900);
}

TEST(MockEngine, RefusesWhatItsContractCannotAnswer) {
  auto letters = make_mock_engine("letters");
  auto refused = letters->prepare(request_with("s", {noul_question()}), {});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, api::ErrorCode::unsupported_question_type);

  api::Question wide;
  wide.key = "w";
  wide.type = api::QuestionType::choice;
  for (int i = 0; i < 27; ++i) wide.options.push_back({"o" + std::to_string(i), nullptr});
  auto too_many = letters->prepare(request_with("s", {wide}), {});
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.error().code, api::ErrorCode::too_many_options);

  auto ramp = make_mock_engine("ramp");
  auto too_long = ramp->prepare(request_with(std::string(5000, 'a'), {noul_question()}), {});
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.error().code, api::ErrorCode::max_tokens_exceeded);
  auto over_budget = ramp->prepare(request_with("short", {noul_question()}), runtime::PrepareLimits{10});
  ASSERT_FALSE(over_budget.ok());
  EXPECT_EQ(over_budget.error().code, api::ErrorCode::max_tokens_exceeded);
}

TEST(MockEngine, RunsAndFinishesWithRampScores) {
  auto engine = make_mock_engine("ramp");
  const auto request = request_with("s", {noul_question()});
  auto plan = engine->prepare(request, {});
  auto outputs = engine->run(**plan);
  ASSERT_TRUE(outputs.ok());
  auto answers = engine->finish(request, **plan, std::move(outputs.value()));
  ASSERT_TRUE(answers.ok());
  EXPECT_NEAR((*answers)[0].probabilities[0], 0.7310585786300049, 1e-12);
}

TEST(MockEngine, UnknownVariantIsNull) { EXPECT_EQ(make_mock_engine("nope"), nullptr); }

}  // namespace
}  // namespace s1::decide
