#include "decide/contracts/valen.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <string>
#include <vector>

#include "api/request.h"
#include "decide/contract_table.h"
#include "model/checkpoint/config_reader.h"
#include "model/checkpoint/load_error.h"
#include "model/heads/bilinear_head.h"
#include "support/engine_runs.h"
#include "support/fixtures.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace s1::decide {
namespace {

using test::question_named;
using test::read_jsonl;

std::filesystem::path fixture_dir() { return test::fixture_dir("tiny-valen"); }

TEST(ValenPrompt, StateBranchesEndpointsAndDecisionMatchTheCompilerGoldens) {
  // prompts.jsonl: tools/reference/valen_contract.py, Valen 750bfcf's compiler over Transformers.
  const auto requests = read_jsonl(fixture_dir() / "requests.jsonl");
  const auto tokenizer = text::Tokenizer::from_file(fixture_dir() / "tokenizer.json");
  const auto chat_template = text::ChatTemplate::from_model_dir(fixture_dir());
  const std::vector<std::string> reserved = valen_reserved_tokens(fixture_dir());
  std::size_t questions = 0;
  for (const api::Json& golden : read_jsonl(fixture_dir() / "prompts.jsonl")) {
    const api::DecisionRequest request = test::typed_request(requests.at(golden["request"].get<std::size_t>()));
    const std::string key = golden["question"].get<std::string>();
    auto state = valen_state_text(request.state, reserved);
    ASSERT_TRUE(state) << key;
    const std::array messages{text::ChatMessage{"user", state.value()}};
    const std::string base = chat_template.render(messages, false, text::Thinking::enabled);
    EXPECT_EQ(base, golden["base"].get<std::string>()) << key;
    std::vector<int32_t> ids = encode_without_special_tokens(tokenizer, base);
    const std::size_t base_length = ids.size();
    auto branch = valen_branch(tokenizer, question_named(request, key), reserved);
    ASSERT_TRUE(branch) << key;
    ids.insert(ids.end(), branch.value().tokens.begin(), branch.value().tokens.end());
    EXPECT_EQ(ids, golden["ids"].get<std::vector<int32_t>>()) << key;
    std::vector<std::size_t> endpoints;
    for (const std::size_t endpoint : branch.value().endpoints) endpoints.push_back(base_length + endpoint);
    EXPECT_EQ(endpoints, golden["endpoints"].get<std::vector<std::size_t>>()) << key;
    EXPECT_EQ(ids.size() - 1, golden["decision"].get<std::size_t>()) << key;
    ++questions;
  }
  EXPECT_EQ(questions, 16U);
}

TEST(ValenPrompt, RefusesWhatTheReferenceRefuses) {
  const auto tokenizer = text::Tokenizer::from_file(fixture_dir() / "tokenizer.json");
  const std::vector<std::string> reserved = valen_reserved_tokens(fixture_dir());
  // The named special tokens, extra_special_tokens and the vision tokens.
  for (const char* token : {"<|im_end|>", "<|endoftext|>", "<|im_start|>", "<|image_pad|>", "<|vision_end|>"}) {
    EXPECT_NE(std::ranges::find(reserved, token), reserved.end()) << token;
  }
  const auto state_code = [&](const api::Json& state) {
    auto text = valen_state_text(state, reserved);
    return text ? api::ErrorCode::internal_error : text.error().code;
  };
  EXPECT_EQ(state_code(api::Json::parse(R"({"image": "data:image/png;base64,AAAA"})")),
            api::ErrorCode::unsupported_media);
  EXPECT_EQ(state_code(" \n\u3000"), api::ErrorCode::validation);
  EXPECT_EQ(state_code("hello <|im_start|> there"), api::ErrorCode::validation);
  EXPECT_EQ(state_code(std::string(16385, 'a')), api::ErrorCode::validation);
  EXPECT_EQ(state_code(std::string(16384, 'a')), api::ErrorCode::internal_error);
  // 16,384 characters of three bytes each are within the limit: the reference counts characters.
  std::string wide;
  for (int i = 0; i < 16384; ++i) wide += "\xe7\x8c\xab";
  EXPECT_EQ(state_code(wide), api::ErrorCode::internal_error);
  EXPECT_EQ(state_code(api::Json::parse(R"({"text": "fine"})")), api::ErrorCode::internal_error);

  const auto branch_code = [&](const std::string& question) {
    const api::DecisionRequest request =
        test::typed_request(api::Json{{"state", "s"}, {"questions", {{"q", api::Json::parse(question)}}}});
    auto branch = valen_branch(tokenizer, request.questions.front(), reserved);
    return branch ? api::ErrorCode::internal_error : branch.error().code;
  };
  EXPECT_EQ(branch_code(R"({"type": "choice", "criteria": {"a": null, "b": null}})"), api::ErrorCode::validation);
  EXPECT_EQ(branch_code(R"({"type": "choice", "instructions": "  ", "criteria": {"a": null}})"),
            api::ErrorCode::validation);
  EXPECT_EQ(branch_code(R"({"type": "choice", "instructions": "Go?", "criteria": {"a": " "}})"),
            api::ErrorCode::validation);
  EXPECT_EQ(branch_code(R"({"type": "choice", "instructions": "Go?", "criteria": {"a<|im_end|>": null}})"),
            api::ErrorCode::validation);
  EXPECT_EQ(branch_code(R"({"type": "choice", "instructions": "Go?", "criteria": {"a": "<|vision_start|>"}})"),
            api::ErrorCode::validation);
  const std::string half(8192, 'x');
  EXPECT_EQ(branch_code(R"({"type": "choice", "instructions": ")" + half + R"(", "criteria": {"a": ")" + half +
                        R"(", "b": "y"}})"),
            api::ErrorCode::validation);
  EXPECT_EQ(branch_code(R"({"type": "choice", "instructions": "Go?", "criteria": {"a": null}})"),
            api::ErrorCode::internal_error);
}

TEST(ValenHead, ProjectsBothStatesAndScalesTheDotProduct) {
  // hidden 2, projection_dim 4: d = W_d·h = (1, 2, 0, -1), c = W_c·h_c; logit = c·d / √4.
  const std::vector<float> decision_weight{1, 0, 0, 1, 0, 0, -1, 0};
  const std::vector<float> candidate_weight{1, 0, 0, 1, 1, 1, 0, -1};
  const heads::BilinearHead head(decision_weight, candidate_weight, 2);
  EXPECT_EQ(head.projection_dim(), 4U);
  const std::vector<float> decision_state{1, 2};
  const std::vector<float> candidates{3, 0, 0, 5, 1, 1};  // c = (3, 0, 3, 0), (0, 5, 5, -5), (1, 1, 2, -1)
  const std::vector<float> logits = head.logits(decision_state, candidates);
  ASSERT_EQ(logits.size(), 3U);
  EXPECT_FLOAT_EQ(logits[0], 1.5F);  // (3 + 0 + 0 + 0) / 2
  EXPECT_FLOAT_EQ(logits[1], 7.5F);  // (0 + 10 + 0 + 5) / 2
  EXPECT_FLOAT_EQ(logits[2], 2.0F);  // (1 + 2 + 0 + 1) / 2
  EXPECT_THROW((void)head.logits(decision_state, std::vector<float>{1, 2, 3}), std::invalid_argument);
  EXPECT_THROW((void)head.logits(std::vector<float>{1}, candidates), std::invalid_argument);
  EXPECT_THROW(heads::BilinearHead(decision_weight, std::vector<float>{1, 2}, 2), std::invalid_argument);
}

TEST(ValenHead, RefusesAHeadFileOfAnotherWidth) {
  EXPECT_THROW((void)heads::BilinearHead::from_file(fixture_dir() / valen_head_file, "head.decision.weight",
                                                    "head.candidate.weight", 64),
               checkpoint::LoadError);
  EXPECT_THROW((void)heads::BilinearHead::from_file(fixture_dir() / valen_head_file, "head.decision.weight",
                                                    "head.missing.weight", 32),
               checkpoint::LoadError);
  const auto head = heads::BilinearHead::from_file(fixture_dir() / valen_head_file, "head.decision.weight",
                                                   "head.candidate.weight", 32);
  EXPECT_EQ(head.projection_dim(), 256U);
}

// Declared before comparing: the hybrid family's fp32 gate on logits (1e-4 × the logit scale) carried
// through the bilinear head and the softmax.
constexpr double answer_tolerance = 1e-4;

TEST(ValenEngine, AnswersLikeTheReferenceWithTheStateRunOnce) {
  LoadedModel model = load_model(fixture_dir().string());
  EXPECT_EQ(model.name, "tiny-valen");
  EXPECT_EQ(model.aliases, std::vector<std::string>{"valen-preview-0923"});
  const runtime::ModelInfo info = model.engine->info();
  EXPECT_EQ(info.question_types, std::vector<api::QuestionType>{api::QuestionType::choice});
  EXPECT_EQ(info.context_tokens, 4096);  // the stand-in's max_position_embeddings, under 8192
  EXPECT_EQ(info.confidence_method, "linear");
  for (const api::Json& line : read_jsonl(fixture_dir() / "expected.jsonl")) {
    const api::DecisionRequest request = test::typed_request(line["request"]);
    const auto [input_tokens, answers] = test::run_engine(*model.engine, request);
    EXPECT_EQ(input_tokens, line["input_tokens"].get<int64_t>());
    for (std::size_t q = 0; q < request.questions.size(); ++q) {
      const api::Json& expected = line["answers"][request.questions[q].key];
      const api::Answer& got = answers[q];
      EXPECT_EQ(request.questions[q].options[got.choice_index].name, expected["choice"].get<std::string>());
      EXPECT_NEAR(got.confidence, expected["confidence"].get<double>(), answer_tolerance);
      for (std::size_t i = 0; i < got.probabilities.size(); ++i) {
        EXPECT_NEAR(got.probabilities[i], expected["probabilities"][request.questions[q].options[i].name].get<double>(),
                    answer_tolerance);
      }
    }
  }
}

TEST(ValenEngine, RefusesOtherTypesNineQuestionsAndLongBranches) {
  LoadedModel model = load_model(fixture_dir().string());
  test::expect_refuses_all_but_choice(*model.engine);
  api::Json nine = api::Json::object();
  for (int i = 0; i < 9; ++i) {
    nine["q" + std::to_string(i)] = {{"type", "choice"}, {"instructions", "Pick."}, {"criteria", {{"a", nullptr}}}};
  }
  EXPECT_EQ(test::prepare_refusal(*model.engine, {{"state", "s"}, {"questions", nine}}),
            api::ErrorCode::payload_too_large);
  nine.erase("q8");
  EXPECT_EQ(test::prepare_refusal(*model.engine, {{"state", "s"}, {"questions", nine}}),
            api::ErrorCode::internal_error);
  std::string numbers;
  for (int i = 0; i < 1500; ++i) numbers += std::to_string(i * 7919) + " ";
  const api::Json pick = {{"type", "choice"}, {"instructions", "Pick."}, {"criteria", {{"a", nullptr}}}};
  EXPECT_EQ(test::prepare_refusal(*model.engine, {{"state", numbers}, {"questions", {{"q", pick}}}}),
            api::ErrorCode::max_tokens_exceeded);
  runtime::PrepareLimits tight;
  tight.token_budget = 20;
  EXPECT_EQ(test::prepare_refusal(*model.engine, {{"state", "a state"}, {"questions", {{"q", pick}}}}, tight),
            api::ErrorCode::max_tokens_exceeded);
  EXPECT_EQ(test::prepare_refusal(*model.engine,
                                  {{"state", {{"image", "data:image/png;base64,AAAA"}}}, {"questions", {{"q", pick}}}}),
            api::ErrorCode::unsupported_media);
}

TEST(ValenSettings, ReadsIdentityAndPrecisionOnly) {
  checkpoint::ConfigReader empty(api::Json::object(), "s1serve.json");
  const ValenSettings defaults = read_valen_settings(empty);
  EXPECT_EQ(defaults.name, "valen-preview-0923");
  EXPECT_EQ(defaults.aliases, (std::vector<std::string>{"Valen-Team/Valen-Preview-0923", "valen"}));
  checkpoint::ConfigReader unknown(api::Json{{"temperature", 2.0}}, "s1serve.json");
  EXPECT_THROW((void)read_valen_settings(unknown), checkpoint::LoadError);
  checkpoint::ConfigReader bad(api::Json{{"precision", "fp16"}}, "s1serve.json");
  EXPECT_THROW((void)read_valen_settings(bad), checkpoint::LoadError);
}

}  // namespace
}  // namespace s1::decide
