#include "decide/contracts/open_jev.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "api/request.h"
#include "decide/answer_math.h"
#include "decide/contract_table.h"
#include "decide/prompt.h"
#include "model/checkpoint/load_error.h"
#include "support/engine_runs.h"
#include "support/fixtures.h"
#include "support/prefix_cache_runs.h"
#include "support/scratch_directory.h"
#include "text/tokenizer.h"

namespace s1::decide {
namespace {

using test::read_jsonl;
using test::question_named;
using test::ScratchDirectoryTest;

std::filesystem::path fixture_dir() { return test::fixture_dir("tiny-open-jev"); }

api::DecisionRequest typed_request(const api::Json& body) {
  api::RequestLimits limits = test::default_model_limits();
  limits.max_questions = 5000;
  return test::typed_request(body, limits);
}

TEST(PythonSortedJson, SortsEveryObjectByCodePointWithDefaultSeparators) {
  // What json.dumps(value, ensure_ascii=False, sort_keys=True) prints.
  EXPECT_EQ(python_sorted_json(api::Json::parse(R"({"z":[1.0,1e16,-0.0,true,null,"猫"],"a":{"β":"z","a":"first"}})")),
            "{\"a\": {\"a\": \"first\", \"\xce\xb2\": \"z\"}, \"z\": [1.0, 1e+16, -0.0, true, null, \"\xe7\x8c\xab\"]}");
  // Upper case before lower case, BMP before astral, a prefix before its extensions.
  EXPECT_EQ(python_sorted_json(api::Json::parse(R"({"\ud83d\ude00":1,"\uffff":2,"b":3,"B":4,"ab":5,"a":6})")),
            "{\"B\": 4, \"a\": 6, \"ab\": 5, \"b\": 3, \"\xef\xbf\xbf\": 2, \"\xf0\x9f\x98\x80\": 1}");
  EXPECT_EQ(python_sorted_json(api::Json::parse(R"([{"b":[{"d":1,"c":2}],"a":1e-05}])")),
            "[{\"a\": 1e-05, \"b\": [{\"c\": 2, \"d\": 1}]}]");
}

TEST(OpenJevPrompt, MatchesTheUpstreamLayout) {
  // Prompt texts of system1-omni tests/open_jev/data/contract.json (Open-Jev 3308a15's compiler).
  const auto requests = read_jsonl(fixture_dir() / "requests.jsonl");
  const api::DecisionRequest structured = typed_request(requests.at(1));
  EXPECT_EQ(open_jev_prompts(structured.state, question_named(structured, "kept-id")),
            (std::vector<std::string>{
                "Context:\n{\"a\": {\"a\": \"first\", \"\xce\xb2\": \"z\"}, \"z\": [1.0, 1e+16, -0.0, true, null, "
                "\"\xe7\x8c\xab\"]}\n\nQuestion: {\"a\": \"choose\", \"z\": 1}\nProposed answer: z-last\nIs this "
                "proposed answer correct? Answer Yes or No.",
                "Context:\n{\"a\": {\"a\": \"first\", \"\xce\xb2\": \"z\"}, \"z\": [1.0, 1e+16, -0.0, true, null, "
                "\"\xe7\x8c\xab\"]}\n\nQuestion: {\"a\": \"choose\", \"z\": 1}\nProposed answer: a-first: [\"A\", "
                "{\"a\": 1, \"z\": 2}]\nIs this proposed answer correct? Answer Yes or No."}));
  const api::DecisionRequest noul = typed_request(requests.at(2));
  EXPECT_EQ(open_jev_prompts(noul.state, question_named(noul, "binary")),
            std::vector<std::string>{
                "Context:\n[\"caf\xc3\xa9\", {\"a\": 1e-05, \"b\": false}]\n\nQuestion: [\"Ready?\", {\"a\": 1, "
                "\"b\": 2}]\nYes means: {\"a\": \"yes\", \"z\": 1}\nNo means: [\"no\", \"later\"]\nIs the answer to "
                "this question yes? Answer Yes or No."});
  // No instructions, one criteria side: an empty question line and only that side's line.
  const api::DecisionRequest partial = typed_request(requests.at(4));
  EXPECT_EQ(open_jev_prompts(partial.state, question_named(partial, "half")),
            std::vector<std::string>{
                "Context:\nDialog: Delete 3 files permanently? Buttons: Delete, Cancel\n\nQuestion: \nYes means: the "
                "user wants the files gone\nIs the answer to this question yes? Answer Yes or No."});
}

TEST(OpenJevPrompt, SequencesAndTokenIdsMatchTheReferenceGoldens) {
  const auto requests = read_jsonl(fixture_dir() / "requests.jsonl");
  const OpenJevExport export_file = read_open_jev_export(fixture_dir() / open_jev_export_file);
  EXPECT_EQ(export_file.chat_prefix, "<|im_start|>user\n");
  EXPECT_EQ(export_file.chat_suffix, "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  const auto tokenizer = text::Tokenizer::from_file(fixture_dir() / "tokenizer.json");
  std::size_t sequences = 0;
  for (const api::Json& golden : read_jsonl(fixture_dir() / "prompts.jsonl")) {
    const api::DecisionRequest request = typed_request(requests.at(golden["request"].get<std::size_t>()));
    const std::string key = golden["question"].get<std::string>();
    const auto bodies = open_jev_prompts(request.state, question_named(request, key));
    const auto texts = golden["texts"].get<std::vector<std::string>>();
    const auto ids = golden["ids"].get<std::vector<std::vector<int32_t>>>();
    ASSERT_EQ(bodies.size(), texts.size()) << key;
    for (std::size_t c = 0; c < bodies.size(); ++c) {
      const std::string sequence = export_file.chat_prefix + bodies[c] + export_file.chat_suffix;
      EXPECT_EQ(sequence, texts[c]) << key << " candidate " << c;
      EXPECT_EQ(tokenizer.encode(sequence).ids, ids[c]) << key << " candidate " << c;
      ++sequences;
    }
  }
  EXPECT_EQ(sequences, 35U);
}

TEST(OpenJevHead, AccumulatesInDoubleThenRoundsToFloat) {
  const std::vector<float> weight{0.5F, -1.25F, 2.0F};
  const std::vector<float> hidden{2.0F, 4.0F, 0.125F};
  EXPECT_EQ(open_jev_head_score(weight, -0.5F, hidden), -4.25F);  // 1 − 5 + 0.25 − 0.5

  // 1e8 + 1 − 1e8: exact in double; a float accumulator loses the 1.
  const std::vector<float> ones{1.0F, 1.0F, 1.0F};
  const std::vector<float> cancelling{1e8F, 1.0F, -1e8F};
  EXPECT_EQ(open_jev_head_score(ones, 0.25F, cancelling), 1.25F);

  // The double sum is rounded to float before the bias is added in float:
  // 3 · float(0.1) = 0.30000000447034836 → float 0.3000000119; + 1e-8 in float stays 0.3000000119.
  const std::vector<float> tenth{0.1F};
  const std::vector<float> three{3.0F};
  EXPECT_EQ(open_jev_head_score(tenth, 1e-8F, three), static_cast<float>(3.0 * static_cast<double>(0.1F)) + 1e-8F);
  EXPECT_EQ(open_jev_head_score(tenth, 1e-8F, three), 0.3000000119F);

  EXPECT_THROW((void)open_jev_head_score(tenth, 0.0F, hidden), std::invalid_argument);
}

TEST(OpenJevAnswers, CalibratedSoftmaxOverEveryCandidate) {
  // Values of system1-omni tests/open_jev/data/contract.json, T of Open-Jev-27B-v1.1.
  constexpr double temperature = 2.5343690298472983;
  const std::vector<float> three{-2.0F, -1.0F, 0.0F};
  auto choice = make_answer(api::QuestionType::choice, open_jev_label_scores(api::QuestionType::choice, three),
                            temperature, ConfidenceMethod::linear);
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice.value().choice_index, 2U);
  EXPECT_NEAR(choice.value().probabilities[0], 0.21343437444688138, 1e-15);
  EXPECT_NEAR(choice.value().probabilities[1], 0.3166841593736535, 1e-15);
  EXPECT_NEAR(choice.value().probabilities[2], 0.4698814661794651, 1e-15);
  EXPECT_NEAR(choice.value().confidence, 0.20482219926919762, 1e-14);

  auto score = make_answer(api::QuestionType::score, open_jev_label_scores(api::QuestionType::score, three),
                           temperature, ConfidenceMethod::linear);
  ASSERT_TRUE(score);
  EXPECT_NEAR(score.value().score, 1.2564470917325836, 1e-14);
  EXPECT_EQ(score.value().confidence, 0.0);  // 1 − E|i − mode| / E_uniform < 0, floored

  const std::vector<float> two{-2.0F, -1.0F};
  auto pair = make_answer(api::QuestionType::choice, open_jev_label_scores(api::QuestionType::choice, two),
                          temperature, ConfidenceMethod::linear);
  EXPECT_NEAR(pair.value().probabilities[1], 0.5973836777434065, 1e-15);
  EXPECT_NEAR(pair.value().confidence, 0.194767355486813, 1e-14);

  // noul: logits [false 0, true s]; s = 1 is the pair (−2, −1) above shifted.
  const std::vector<float> noul_score{1.0F};
  EXPECT_EQ(open_jev_label_scores(api::QuestionType::noul, noul_score), (std::vector<double>{1.0, 0.0}));
  auto noul = make_answer(api::QuestionType::noul, open_jev_label_scores(api::QuestionType::noul, noul_score),
                          temperature, ConfidenceMethod::linear);
  EXPECT_NEAR(noul.value().probabilities[0], 0.5973836777434065, 1e-15);

  const std::vector<float> tie{0.0F, 0.0F};
  auto tied = make_answer(api::QuestionType::choice, open_jev_label_scores(api::QuestionType::choice, tie),
                          temperature, ConfidenceMethod::linear);
  EXPECT_EQ(tied.value().choice_index, 0U);
  EXPECT_EQ(tied.value().confidence, 0.0);
  const std::vector<float> one{0.0F};
  auto only = make_answer(api::QuestionType::choice, open_jev_label_scores(api::QuestionType::choice, one),
                          temperature, ConfidenceMethod::linear);
  EXPECT_EQ(only.value().probabilities, std::vector<double>{1.0});
  EXPECT_EQ(only.value().confidence, 1.0);
  EXPECT_THROW((void)open_jev_label_scores(api::QuestionType::noul, two), std::invalid_argument);
}

class OpenJevExportFile : public ScratchDirectoryTest {
 protected:
  void SetUp() override {
    ScratchDirectoryTest::SetUp();
    std::ifstream in(fixture_dir() / open_jev_export_file);
    base_ = api::Json::parse(in);
  }

  std::filesystem::path write(const api::Json& content) const {
    const auto path = dir_ / open_jev_export_file;
    std::ofstream(path) << content.dump();
    return path;
  }
  std::string error_of(const api::Json& content) const {
    try {
      (void)read_open_jev_export(write(content));
    } catch (const checkpoint::LoadError& error) {
      return error.what();
    }
    return "";
  }

  api::Json base_;
};

TEST_F(OpenJevExportFile, ReadsTheFixture) {
  const OpenJevExport file = read_open_jev_export(write(base_));
  EXPECT_EQ(file.temperature, 2.5343690298472983);
  EXPECT_EQ(file.max_length, 512U);
  EXPECT_EQ(file.head_weight.size(), 32U);
  EXPECT_EQ(file.head_bias, static_cast<float>(base_["head_bias"].get<double>()));
  EXPECT_FALSE(open_jev_checkpoint(file.model_id));
}

TEST_F(OpenJevExportFile, RefusesBadMembersNamingThem) {
  auto changed = [&](const std::string& key, const api::Json& value) {
    api::Json copy = base_;
    copy[key] = value;
    return copy;
  };
  EXPECT_NE(error_of(changed("format", "open-jev-text-merged/2")).find("'format'"), std::string::npos);
  EXPECT_NE(error_of(changed("temperature", 0.0)).find("'temperature'"), std::string::npos);
  EXPECT_NE(error_of(changed("max_length", 16385)).find("'max_length'"), std::string::npos);
  EXPECT_NE(error_of(changed("max_length", 0)).find("'max_length'"), std::string::npos);
  EXPECT_NE(error_of(changed("head_weight", api::Json::array())).find("'head_weight'"), std::string::npos);
  EXPECT_NE(error_of(changed("head_bias", "x")).find("'head_bias'"), std::string::npos);
  EXPECT_NE(error_of(changed("extra", 1)).find("extra"), std::string::npos);
  api::Json missing = base_;
  missing.erase("chat_suffix");
  EXPECT_NE(error_of(missing).find("'chat_suffix'"), std::string::npos);
  EXPECT_EQ(error_of(changed("max_length", 16384)), "");
}

TEST_F(OpenJevExportFile, PinnedCheckpointsNameThemselvesAndCheckTheirRevisions) {
  OpenJevExport file = read_open_jev_export(write(base_));
  file.model_id = "Qwen/Qwen3.8-27B";
  file.base_revision = "1d4bf0f2ff6012fd82039f2fa52739d0dd7c60c0";
  file.checkpoint_revision = "28cf73067d5b337860bbef3c85b8b82ba8730956";
  checkpoint::ConfigReader empty(nlohmann::ordered_json::object(), "s1serve.json");
  const OpenJevSettings settings = read_open_jev_settings(empty, file);
  EXPECT_EQ(settings.name, "Open-Jev-27B-v1.1");
  EXPECT_EQ(settings.aliases,
            (std::vector<std::string>{"open-jev-27b-v1.1", "Qwen/Qwen3.8-27B", "open-jev", "jev-latest"}));

  file.model_id = "Qwen/Qwen3.5-9B";
  checkpoint::ConfigReader again(nlohmann::ordered_json::object(), "s1serve.json");
  EXPECT_THROW((void)read_open_jev_settings(again, file), checkpoint::LoadError);  // the 27B's revisions
  file.base_revision = "c202236235762e1c871ad0ccb60c8ee5ba337b9a";
  file.checkpoint_revision = "47e966881e489511c0c7f5633a9e1960a676a551";
  checkpoint::ConfigReader named(nlohmann::ordered_json{{"name", "jev-9b"}, {"aliases", {"open-jev-9b"}}},
                                 "s1serve.json");
  const OpenJevSettings nine = read_open_jev_settings(named, file);
  EXPECT_EQ(nine.name, "jev-9b");
  EXPECT_EQ(nine.aliases, std::vector<std::string>{"open-jev-9b"});

  file.model_id = "someone/else";
  checkpoint::ConfigReader unnamed(nlohmann::ordered_json::object(), "s1serve.json");
  EXPECT_THROW((void)read_open_jev_settings(unnamed, file), checkpoint::LoadError);
}

// Declared before comparing: the hybrid family's fp32 gate on logits (|Δ| ≤ 1e-4 × the logit scale,
// tests/parity/qwen3_5_parity_test.cpp) carried through the scalar head and the calibrated softmax.
constexpr double answer_tolerance = 1e-4;

TEST(OpenJevEngine, AnswersLikeIndependentTransformersRunsWithTheStateRunOnce) {
  LoadedModel model = load_model(fixture_dir().string());
  EXPECT_EQ(model.name, "tiny-open-jev");
  EXPECT_EQ(model.aliases, (std::vector<std::string>{"open-jev", "jev-latest", "tiny-open-jev-27b-v1.1"}));
  const runtime::ModelInfo info = model.engine->info();
  EXPECT_EQ(info.question_types.size(), 3U);
  EXPECT_EQ(info.max_choice_options, 255U);
  EXPECT_EQ(info.context_tokens, 512);
  std::size_t shared = 0;
  for (const api::Json& line : read_jsonl(fixture_dir() / "expected.jsonl")) {
    const api::DecisionRequest request = typed_request(line["request"]);
    const auto [input_tokens, answers] = test::run_engine(*model.engine, request);
    EXPECT_EQ(input_tokens, line["input_tokens"].get<int64_t>());
    if (input_tokens < line["independent_tokens"].get<int64_t>()) ++shared;
    for (std::size_t q = 0; q < request.questions.size(); ++q) {
      const api::Json& expected = line["answers"][request.questions[q].key];
      const api::Answer& got = answers[q];
      switch (got.type) {
        case api::QuestionType::noul:
          EXPECT_NEAR(got.probabilities[0], expected["noul"].get<double>(), answer_tolerance);
          break;
        case api::QuestionType::choice:
          EXPECT_EQ(request.questions[q].options[got.choice_index].name, expected["choice"].get<std::string>());
          EXPECT_NEAR(got.confidence, expected["confidence"].get<double>(), answer_tolerance);
          for (std::size_t i = 0; i < got.probabilities.size(); ++i) {
            EXPECT_NEAR(got.probabilities[i],
                        expected["probabilities"][request.questions[q].options[i].name].get<double>(), answer_tolerance);
          }
          break;
        case api::QuestionType::score:
          EXPECT_NEAR(got.score, expected["score"].get<double>(), answer_tolerance);
          EXPECT_NEAR(got.confidence, expected["confidence"].get<double>(), answer_tolerance);
          for (std::size_t i = 0; i < got.probabilities.size(); ++i) {
            EXPECT_NEAR(got.probabilities[i], expected["probabilities"][std::to_string(i)].get<double>(), answer_tolerance);
          }
          break;
      }
    }
  }
  EXPECT_GE(shared, 3U);  // the fixture's long states are shared by every candidate sequence
}

TEST(OpenJevEngine, RefusesBeforeInference) {
  LoadedModel model = load_model(fixture_dir().string());
  // A candidate over the export's max_length (512) is refused whole, never truncated.
  std::string long_state;
  for (int i = 0; i < 400; ++i) long_state += std::to_string(i * 7919) + ", ";
  api::Json body = {{"state", long_state},
                    {"questions", {{"q", {{"type", "choice"}, {"criteria", {{"a", nullptr}, {"b", nullptr}}}}}}}};
  auto plan = model.engine->prepare(typed_request(body), {});
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().code, api::ErrorCode::max_tokens_exceeded);
  EXPECT_NE(plan.error().message.find("context is 512 tokens"), std::string::npos);

  // More than 65,536 candidate sequences (258 questions of 255 options).
  api::Json criteria = api::Json::object();
  for (int i = 0; i < 255; ++i) criteria["o" + std::to_string(i)] = nullptr;
  api::Json questions = api::Json::object();
  for (int q = 0; q < 258; ++q) questions["q" + std::to_string(q)] = {{"type", "choice"}, {"criteria", criteria}};
  plan = model.engine->prepare(typed_request({{"state", "s"}, {"questions", questions}}), {});
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().code, api::ErrorCode::max_tokens_exceeded);
  EXPECT_NE(plan.error().message.find("65536 candidate sequences"), std::string::npos);

  // The request budget counts the shared state once.
  api::Json small = {{"state", "s"}, {"questions", {{"n", {{"type", "noul"}}}}}};
  runtime::PrepareLimits tight;
  tight.token_budget = 10;
  plan = model.engine->prepare(typed_request(small), tight);
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().code, api::ErrorCode::max_tokens_exceeded);
}

TEST(OpenJevEngine, ThePrefixCacheChangesNoAnswer) {
  // Cached: every request of the fixture shares its chat prefix and state across candidates.
  LoadedModel plain = load_model(fixture_dir().string());
  LoadedModel cached = load_model(fixture_dir().string());
  EXPECT_GT(test::expect_prefix_cache_changes_nothing(*plain.engine, *cached.engine, fixture_dir() / "expected.jsonl"),
            0U);
}

}  // namespace
}  // namespace s1::decide
