#include "decide/contracts/lfm2_candidates.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "api/request.h"
#include "decide/contract_common.h"
#include "decide/contract_table.h"
#include "model/checkpoint/load_error.h"
#include "support/engine_runs.h"
#include "support/fixtures.h"
#include "support/prefix_cache_runs.h"
#include "support/reference_answers.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace s1::decide {
namespace {

using test::typed_request;
using test::choice;

std::filesystem::path fixture_dir() { return test::fixture_dir("tiny-lfm2"); }

TEST(Lfm2CandidatesPrompt, SchemaAndMessages) {
  const api::Question question = choice({{"yes", "asks for a refund"}, {"n\"o", nullptr}}, "Refund?");
  EXPECT_EQ(lfm2_candidates_schema(question),
            R"({"type": "object", "properties": {"answer": {"type": "string", "description": )"
            R"("{\"instructions\": \"Refund?\", \"criteria\": {\"yes\": \"asks for a refund\", \"n\\\"o\": null}}", )"
            R"("enum": ["yes", "n\"o"]}}, "required": ["answer"], "additionalProperties": false})");
  const auto messages = lfm2_candidates_messages(api::Json::parse(R"({"a":[1,"é"]})"), question);
  ASSERT_EQ(messages.size(), 2U);
  EXPECT_EQ(messages[0].role, "system");
  EXPECT_EQ(messages[0].content, "Extract the attributes from the text. Return only a JSON object matching this schema. "
                                 "Use the exact allowed values. No explanation or markdown.\n" +
                                     lfm2_candidates_schema(question));
  EXPECT_EQ(messages[1].role, "user");
  EXPECT_EQ(messages[1].content, "{\"a\": [1, \"\xc3\xa9\"]}");
  EXPECT_EQ(lfm2_candidates_messages("  plain  ", question)[1].content, "  plain  ");
  EXPECT_EQ(lfm2_candidates_value({"日本\"語", nullptr}), "\"日本\\\"語\"\n");
  EXPECT_EQ(lfm2_candidates_field_suffix(), "  \"answer\": ");
  EXPECT_EQ(lfm2_candidates_prompt_tail(), "{\n");
  api::Question noul = choice({{"a", nullptr}});
  noul.type = api::QuestionType::noul;
  EXPECT_THROW(lfm2_candidates_messages("S", noul), std::invalid_argument);
  EXPECT_THROW(lfm2_candidates_messages("S", choice({})), std::invalid_argument);
}

// Text and token ids of every question of requests.jsonl against Transformers' apply_chat_template
// and tokenizer (tools/reference/make_tiny_lfm2.py wrote prompts.jsonl): the prompt, the field
// suffix and each option's value.
TEST(Lfm2CandidatesPrompt, MatchesTransformersGoldens) {
  const auto chat_template = text::ChatTemplate::from_model_dir(fixture_dir());
  const auto tokenizer = text::Tokenizer::from_file(fixture_dir() / "tokenizer.json");
  const std::size_t checked = test::for_each_prompt_golden(
      fixture_dir(), [&](const api::Json& golden, const api::DecisionRequest& request, const api::Question& question) {
        const std::string& key = question.key;
        const std::string prompt = chat_template.render(lfm2_candidates_messages(request.state, question), true,
                                                        text::Thinking::disabled) +
                                   std::string(lfm2_candidates_prompt_tail());
        EXPECT_EQ(prompt, golden["text"].get<std::string>()) << key;
        EXPECT_TRUE(prompt.starts_with("<|startoftext|><|im_start|>system\n"));
        EXPECT_EQ(encode_without_special_tokens(tokenizer, prompt), golden["ids"].get<std::vector<int32_t>>()) << key;
        EXPECT_EQ(encode_without_special_tokens(tokenizer, lfm2_candidates_field_suffix()),
                  golden["suffix"].get<std::vector<int32_t>>());
        ASSERT_EQ(question.options.size(), golden["values"].size()) << key;
        for (std::size_t i = 0; i < question.options.size(); ++i) {
          EXPECT_EQ(encode_without_special_tokens(tokenizer, lfm2_candidates_value(question.options[i])),
                    golden["values"][i].get<std::vector<int32_t>>())
              << key << "/" << question.options[i].name;
        }
      });
  EXPECT_EQ(checked, 6U);
}

TEST(Lfm2CandidatesReadout, SoftmaxOfLogLikelihoodsAndEntropyConfidence) {
  // API contract §5.2's worked values: scores −i (log-likelihoods are ≤ 0), entropy confidence.
  const std::vector<double> scores{-0.0, -1.0, -2.0};
  const auto answer = lfm2_candidates_answer(scores);
  ASSERT_TRUE(answer);
  EXPECT_NEAR(answer.value().probabilities[0], 0.6652409557748218, 1e-12);
  EXPECT_NEAR(answer.value().probabilities[2], 0.09003057317038046, 1e-12);
  EXPECT_NEAR(answer.value().confidence, 0.24232088933841778, 1e-12);
  EXPECT_EQ(answer.value().choice_index, 0U);
  // No length normalisation: a longer value's larger (more negative) sum is compared as it is.
  const std::vector<double> sums{-12.0, -3.5};
  EXPECT_EQ(lfm2_candidates_answer(sums).value().choice_index, 1U);
  // Exact ties go to the earliest option, with zero confidence.
  const std::vector<double> tie{-4.25, -4.25};
  EXPECT_EQ(lfm2_candidates_answer(tie).value().choice_index, 0U);
  EXPECT_EQ(lfm2_candidates_answer(tie).value().confidence, 0.0);
  const std::vector<double> one{-30.0};
  EXPECT_EQ(lfm2_candidates_answer(one).value().confidence, 1.0);
  EXPECT_EQ(lfm2_candidates_answer(one).value().probabilities, std::vector<double>{1.0});
  // A non-finite score is a 500, as the reference worker raises on one.
  for (const double broken : {NAN, -INFINITY}) {
    const std::vector<double> scores_with_broken{broken, -1.0};
    EXPECT_EQ(lfm2_candidates_answer(scores_with_broken).error().code, api::ErrorCode::internal_error);
  }
}

TEST(Lfm2CandidatesEngine, AnswersLikeTheTransformersReference) {
  LoadedModel model = load_model(fixture_dir().string());
  EXPECT_EQ(model.name, "tiny-lfm2");
  const runtime::ModelInfo info = model.engine->info();
  EXPECT_EQ(info.question_types, std::vector{api::QuestionType::choice});
  EXPECT_EQ(info.max_choice_options, 255U);
  EXPECT_EQ(info.confidence_method, "entropy");
  EXPECT_EQ(test::expect_reference_answers(*model.engine, fixture_dir() / "expected.jsonl", 1e-5), 6U);
}

TEST(Lfm2CandidatesEngine, BatchSizeDoesNotChangeAnswers) {
  Lfm2CandidatesSettings settings;
  settings.candidate_batch_size = 1;
  const auto one_by_one = make_lfm2_candidates_engine(fixture_dir(), settings);
  EXPECT_EQ(test::expect_reference_answers(*one_by_one, fixture_dir() / "expected.jsonl", 1e-5), 6U);
  settings.candidate_batch_size = 5;
  const auto in_fives = make_lfm2_candidates_engine(fixture_dir(), settings);
  EXPECT_EQ(test::expect_reference_answers(*in_fives, fixture_dir() / "expected.jsonl", 1e-5), 6U);
}

TEST(Lfm2CandidatesEngine, RefusesOtherQuestionTypes) {
  LoadedModel model = load_model(fixture_dir().string());
  test::expect_refuses_all_but_choice(*model.engine);
  runtime::PrepareLimits tight;
  tight.token_budget = 100;
  auto over_budget = model.engine->prepare(
      typed_request(api::Json::parse(R"({"state":"s","questions":{"a":{"type":"choice","criteria":{"x":null}}}})")),
      tight);
  ASSERT_FALSE(over_budget);
}

// The same tiny checkpoint as a plain LFM2 chat model (the family table, the LFM2.5 chat template) under
// the generic label-token contract, in fp32, against tools/reference/label_token_contract.py.
TEST(Lfm2ChatCheckpoint, ServedByTheLabelTokenContractLikeTransformers) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("s1_lfm2_chat_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::create_directories(dir);
  for (const char* file : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"}) {
    std::filesystem::copy_file(fixture_dir() / file, dir / file, std::filesystem::copy_options::overwrite_existing);
  }
  std::ofstream(dir / "s1serve.json") << R"({"contract": "label-token", "name": "tiny-lfm2-chat", "precision": "fp32"})";
  LoadedModel model = load_model(dir.string());
  EXPECT_EQ(test::expect_reference_answers(*model.engine, fixture_dir() / "label_token_expected.jsonl", 1e-5), 4U);
  std::filesystem::remove_all(dir);
}

TEST(Lfm2CandidatesSettings, ReadsAndRejectsDecisionFileMembers) {
  const auto read = [](const char* text) {
    checkpoint::ConfigReader reader(nlohmann::ordered_json::parse(text), "s1serve.json");
    return read_lfm2_candidates_settings(reader);
  };
  const Lfm2CandidatesSettings settings = read(R"({"name":"x","aliases":["y"],"precision":"fp32","candidate_batch_size":8})");
  EXPECT_EQ(settings.name, "x");
  EXPECT_EQ(settings.candidate_batch_size, 8U);
  EXPECT_EQ(settings.precision, backend::cpu::Precision::fp32);
  EXPECT_THROW(read(R"({"candidate_batch_size":0})"), checkpoint::LoadError);
  EXPECT_THROW(read(R"({"precision":"fp16"})"), checkpoint::LoadError);
  EXPECT_THROW(read(R"({"temperature":2.0})"), checkpoint::LoadError);
}

TEST(Lfm2CandidatesEngine, ThePrefixCacheChangesNoAnswer) {
  // Cached: each question's prompt (schema and state) before its option branches.
  LoadedModel plain = load_model(fixture_dir().string());
  LoadedModel cached = load_model(fixture_dir().string());
  EXPECT_GT(test::expect_prefix_cache_changes_nothing(*plain.engine, *cached.engine, fixture_dir() / "expected.jsonl"),
            0U);
}

}  // namespace
}  // namespace s1::decide
