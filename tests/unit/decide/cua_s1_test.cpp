#include "decide/contracts/cua_s1.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "api/request.h"
#include "decide/contract_common.h"
#include "decide/contract_table.h"
#include "decide/prompt.h"
#include "support/engine_runs.h"
#include "support/fixtures.h"
#include "support/reference_answers.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace s1::decide {
namespace {

using test::choice;

std::filesystem::path fixture_dir() { return test::fixture_dir("tiny-cua-s1"); }

TEST(PythonJson, DefaultSeparatorsKeyOrderAndRawNonAscii) {
  // What json.dumps(value, ensure_ascii=False) prints.
  EXPECT_EQ(python_json(api::Json::parse(R"({"b":[1,{"é":null}],"a":1e16,"c":"x\"y"})")),
            "{\"b\": [1, {\"\xc3\xa9\": null}], \"a\": 1e+16, \"c\": \"x\\\"y\"}");
  EXPECT_EQ(python_json(api::Json::parse("[[], {}, 0.0001, 1e-05, -0.0, \"\\u0001\\n\"]")),
            "[[], {}, 0.0001, 1e-05, -0.0, \"\\u0001\\n\"]");
  EXPECT_EQ(python_escaped_string_body("say \"hi\"\\\n\t\xe6\x97\xa5"), "say \\\"hi\\\"\\\\\\n\\t\xe6\x97\xa5");
}

TEST(CuaS1Prompt, OptionLabelsEscapeTheValueOrTheName) {
  EXPECT_EQ(cua_s1_option_label({"type \"x\"", nullptr}), "type \\\"x\\\"");
  EXPECT_EQ(cua_s1_option_label({"ignored", "line\nbreak"}), "line\\nbreak");
  EXPECT_EQ(cua_s1_option_label({"ignored", api::Json::parse(R"({"role":"button","n":[1,2]})")}),
            "{\\\"role\\\": \\\"button\\\", \\\"n\\\": [1, 2]}");
}

TEST(CuaS1Prompt, UserMessageLayout) {
  const auto messages = cua_s1_messages("Screen", choice({{"a", "Click A"}, {"b", nullptr}}, "Do it."));
  ASSERT_EQ(messages.size(), 2U);
  EXPECT_EQ(messages[0].role, "system");
  EXPECT_EQ(messages[0].content, cua_s1_system_message());
  EXPECT_EQ(messages[1].content,
            "Goal: Do it.\n\nApp: Cua Driver\nTask family: closed-candidate decision\n\nAccessibility tree:\nScreen\n\n"
            "Options:\nA. Decision \"Click A\" -> select\nB. Decision \"b\" -> select\n\nAnswer with a single letter.");
  // No goal line for null or empty instructions.
  EXPECT_TRUE(cua_s1_messages("S", choice({{"a", nullptr}}, "")).at(1).content.starts_with("App: Cua Driver\n"));
  EXPECT_TRUE(cua_s1_messages("S", choice({{"a", nullptr}})).at(1).content.starts_with("App: Cua Driver\n"));
  api::Question score = choice({{"a", nullptr}});
  score.type = api::QuestionType::score;
  EXPECT_THROW(cua_s1_messages("S", score), std::invalid_argument);
  EXPECT_THROW(cua_s1_messages("S", choice(std::vector<api::ChoiceOption>(27, {"x", nullptr}))),
               std::invalid_argument);
}

// Bytes and token ids of every question of requests.jsonl against Transformers' apply_chat_template
// and tokenizer (tools/reference/make_tiny_cua_s1.py wrote prompts.jsonl).
TEST(CuaS1Prompt, MatchesTransformersGoldens) {
  const auto chat_template = text::ChatTemplate::from_model_dir(fixture_dir());
  const auto tokenizer = text::Tokenizer::from_file(fixture_dir() / "tokenizer.json");
  const std::size_t checked = test::for_each_prompt_golden(
      fixture_dir(), [&](const api::Json& golden, const api::DecisionRequest& request, const api::Question& question) {
        const std::string prompt = chat_template.render(cua_s1_messages(request.state, question), true,
                                                        text::Thinking::enabled);
        EXPECT_EQ(prompt, golden["text"].get<std::string>()) << question.key;
        EXPECT_TRUE(prompt.ends_with("<|im_start|>assistant\n<think>\n"));
        EXPECT_EQ(encode_without_special_tokens(tokenizer, prompt), golden["ids"].get<std::vector<int32_t>>())
            << question.key;
      });
  EXPECT_EQ(checked, 9U);
}

TEST(CuaS1Readout, RoundsLogitsToBf16NearestEven) {
  EXPECT_EQ(round_logit_to_bf16(1.0), 1.0);
  EXPECT_EQ(round_logit_to_bf16(1.00390625), 1.0);         // halfway, even neighbour below
  EXPECT_EQ(round_logit_to_bf16(1.01171875), 1.015625);    // halfway, even neighbour above
  EXPECT_EQ(round_logit_to_bf16(1.005), 1.0078125);
  EXPECT_EQ(round_logit_to_bf16(-2.3), -2.296875);
  EXPECT_EQ(round_logit_to_bf16(0.0), 0.0);
  EXPECT_TRUE(std::isinf(round_logit_to_bf16(INFINITY)));
}

TEST(CuaS1Readout, SoftmaxWithoutTemperatureAndEntropyConfidence) {
  // API contract §5.2's worked values (sᵢ = −i shifted by 2: the softmax is shift-free).
  const std::vector<double> logits{2.0, 1.0, 0.0};
  const auto answer = cua_s1_answer(logits, LogitRounding::bf16);
  ASSERT_TRUE(answer);
  EXPECT_NEAR(answer.value().probabilities[0], 0.6652409557748218, 1e-12);
  EXPECT_NEAR(answer.value().probabilities[2], 0.09003057317038046, 1e-12);
  EXPECT_NEAR(answer.value().confidence, 0.24232088933841778, 1e-12);
  EXPECT_EQ(answer.value().choice_index, 0U);

  // 1.005 reaches the softmax as 1.0078125: p = 1/(1 + e^−1.0078125), confidence 1 − H(p)/ln 2.
  const std::vector<double> near{1.005, 0.0};
  const auto rounded = cua_s1_answer(near, LogitRounding::bf16);
  EXPECT_NEAR(rounded.value().probabilities[0], 0.7325918338117745, 1e-12);
  EXPECT_NEAR(rounded.value().confidence, 0.1622791171492357, 1e-12);
  EXPECT_GT(std::abs(cua_s1_answer(near, LogitRounding::none).value().probabilities[0] - 0.7325918338117745), 1e-4);

  // Logits equal after rounding: the earliest option wins with zero confidence; unrounded, the later.
  const std::vector<double> tie{0.5, 0.5 + 1e-9};
  EXPECT_EQ(cua_s1_answer(tie, LogitRounding::bf16).value().choice_index, 0U);
  EXPECT_EQ(cua_s1_answer(tie, LogitRounding::bf16).value().confidence, 0.0);
  EXPECT_EQ(cua_s1_answer(tie, LogitRounding::none).value().choice_index, 1U);

  const std::vector<double> one{-3.0};
  EXPECT_EQ(cua_s1_answer(one, LogitRounding::bf16).value().confidence, 1.0);
  EXPECT_EQ(cua_s1_answer(one, LogitRounding::bf16).value().probabilities, std::vector<double>{1.0});

  const std::vector<double> broken{NAN, 0.0};
  EXPECT_EQ(cua_s1_answer(broken, LogitRounding::bf16).error().code, api::ErrorCode::internal_error);
}

TEST(CuaS1Engine, AnswersLikeTheTransformersReference) {
  LoadedModel model = load_model(fixture_dir().string());
  EXPECT_EQ(model.name, "tiny-cua-s1");
  const runtime::ModelInfo info = model.engine->info();
  EXPECT_EQ(info.question_types, std::vector{api::QuestionType::choice});
  EXPECT_EQ(info.max_choice_options, 26U);
  EXPECT_EQ(info.confidence_method, "entropy");
  EXPECT_GT(test::expect_reference_answers(*model.engine, fixture_dir() / "expected.jsonl", 1e-5), 0U);
}

TEST(CuaS1Engine, RefusesOtherQuestionTypesAndTooManyOptions) {
  LoadedModel model = load_model(fixture_dir().string());
  test::expect_refuses_all_but_choice(*model.engine);
  api::Json many = api::Json::parse(R"({"state":"s","questions":{"a":{"type":"choice","criteria":{}}}})");
  for (int i = 0; i < 27; ++i) many["questions"]["a"]["criteria"]["o" + std::to_string(i)] = nullptr;
  EXPECT_EQ(test::prepare_refusal(*model.engine, many), api::ErrorCode::too_many_options);
}

}  // namespace
}  // namespace s1::decide
