#include "decide/contracts/jev_vl.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "api/request.h"
#include "decide/contract_table.h"
#include "model/checkpoint/config_reader.h"
#include "model/checkpoint/load_error.h"
#include "model/heads/verbalizer_rows.h"
#include "support/engine_runs.h"
#include "support/fixtures.h"
#include "support/prefix_cache_runs.h"
#include "support/scratch_directory.h"
#include "text/tokenizer.h"

namespace s1::decide {
namespace {

using test::question_named;
using test::read_jsonl;
using test::ScratchDirectoryTest;

std::filesystem::path fixture_dir() { return test::fixture_dir("tiny-jev-vl"); }

JevVlExport fixture_export() { return read_jev_vl_export(fixture_dir() / jev_vl_export_file); }

TEST(JevVlPrompt, MatchesTheUpstreamLayout) {
  // serve_decide.py's s1_pass as system1-omni's contract.rs writes it.
  const std::vector<std::string> labels{"A", "B", "C"};
  const api::DecisionRequest request = test::typed_request(api::Json::parse(R"({"state": "The package arrived damaged.",
      "questions": {"q": {"type": "choice", "instructions": "What should support do?",
                          "criteria": {"replace": "Offer a replacement", "close": null}}}})"));
  EXPECT_EQ(jev_vl_prompt(request.state, request.questions[0], labels).value(),
            "[kind] choice\n[state] The package arrived damaged.\n[question] What should support do?\n[options]\n"
            "A) replace: Offer a replacement\nB) close\n[decision]:");
  const api::DecisionRequest parts =
      test::typed_request(api::Json::parse(R"({"state": ["a", {"type": "text", "text": "b"},
      {"k": 1e-05, "z": "猫"}, 7, null], "questions": {"n": {"type": "noul", "instructions": {"ask": 1}}}})"));
  EXPECT_EQ(jev_vl_prompt(parts.state, parts.questions[0], labels).value(),
            "[kind] noul\n[state] ab{\"k\": 1e-05, \"z\": \"\xe7\x8c\xab\"}7null\n[question] {\"ask\": 1}\n[options]\n"
            "false\ntrue\n[decision]:");
}

TEST(JevVlPrompt, PromptsAndTokenIdsMatchTheReferenceGoldens) {
  const auto requests = read_jsonl(fixture_dir() / "requests.jsonl");
  const JevVlExport export_file = fixture_export();
  const auto tokenizer = text::Tokenizer::from_file(fixture_dir() / "tokenizer.json");
  std::size_t questions = 0;
  for (const api::Json& golden : read_jsonl(fixture_dir() / "prompts.jsonl")) {
    const api::DecisionRequest request = test::typed_request(requests.at(golden["request"].get<std::size_t>()));
    const std::string key = golden["question"].get<std::string>();
    auto prompt = jev_vl_prompt(request.state, question_named(request, key), export_file.labels);
    ASSERT_TRUE(prompt) << key;
    EXPECT_EQ(prompt.value(), golden["text"].get<std::string>()) << key;
    EXPECT_EQ(encode_without_special_tokens(tokenizer, prompt.value()), golden["ids"].get<std::vector<int32_t>>())
        << key;
    ++questions;
  }
  EXPECT_EQ(questions, 9U);
}

TEST(JevVlPrompt, RefusesWhatTheMappingCannotExpress) {
  const std::vector<std::string> labels{"A", "B", "C"};
  const auto code = [&](const std::string& body) {
    const api::DecisionRequest request = test::typed_request(api::Json::parse(body));
    auto prompt = jev_vl_prompt(request.state, request.questions[0], labels);
    return prompt ? api::ErrorCode::internal_error : prompt.error().code;
  };
  EXPECT_EQ(code(R"({"state": "s", "questions": {"q": {"type": "choice", "criteria": {"a": null}}}})"),
            api::ErrorCode::validation);
  EXPECT_EQ(code(R"({"state": "s", "questions": {"q": {"type": "choice", "criteria": {"a": null, "b": null, "c": null,
      "d": null}}}})"),
            api::ErrorCode::too_many_options);
  EXPECT_EQ(code(R"({"state": "s", "questions": {"q": {"type": "score", "criteria": ["0", "1", "2", "3", "4"]}}})"),
            api::ErrorCode::validation);
  EXPECT_EQ(code(R"({"state": "s", "questions": {"q": {"type": "noul", "instructions": "Ok?",
      "criteria": {"true": "yes"}}}})"),
            api::ErrorCode::validation);
  EXPECT_EQ(code(R"({"state": ["look", {"image": "data:image/png;base64,AAAA"}], "questions": {"q": {"type": "noul",
      "instructions": "Ok?"}}})"),
            api::ErrorCode::unsupported_media);
  // A top-level object with an image member is text to upstream's _parts, as any object is.
  EXPECT_EQ(code(R"({"state": {"image": "x"}, "questions": {"q": {"type": "noul", "instructions": "Ok?"}}})"),
            api::ErrorCode::internal_error);
}

TEST(JevVlReadout, SlotsBiasesAndTemperaturesPerKind) {
  const JevVlExport e = fixture_export();
  const JevVlReadout noul = jev_vl_readout(e, api::QuestionType::noul, 2);
  EXPECT_EQ(noul.token_ids, (std::vector<int64_t>{e.verbalizer_ids[0], e.verbalizer_ids[1]}));
  EXPECT_EQ(noul.bias, (std::vector<double>{e.verbalizer_bias[0], e.verbalizer_bias[1]}));
  EXPECT_EQ(noul.temperature, 1.3);
  const JevVlReadout score = jev_vl_readout(e, api::QuestionType::score, 6);
  EXPECT_EQ(score.token_ids, std::vector<int64_t>(e.verbalizer_ids.begin() + 2, e.verbalizer_ids.begin() + 8));
  EXPECT_EQ(score.temperature, 0.8);
  const JevVlReadout wide = jev_vl_readout(e, api::QuestionType::choice, 20);
  EXPECT_EQ(wide.token_ids, std::vector<int64_t>(e.label_ids.begin(), e.label_ids.begin() + 20));
  EXPECT_EQ(wide.bias[15], e.verbalizer_bias[23]);  // the last trained slot
  EXPECT_EQ(wide.bias[16], 0.0);                    // exported labels past P carry no bias
  EXPECT_EQ(wide.temperature, 1.7);

  // (logit + bias) / T; noul turned from upstream's (false, true) into the API's (true, false).
  const JevVlReadout two{{1, 2}, {0.5, -1.0}, 2.0};
  EXPECT_EQ(jev_vl_label_scores(two, api::QuestionType::choice, {1.5, 3.0}), (std::vector<double>{1.0, 1.0}));
  EXPECT_EQ(jev_vl_label_scores(two, api::QuestionType::noul, {1.5, 4.0}), (std::vector<double>{1.5, 1.0}));
}

TEST(JevVlHead, RowsAccumulateInDouble) {
  const heads::VerbalizerRows rows({1e8F, 1.0F, -1e8F, 0.5F, 0.25F, 2.0F}, {7, 3}, 3);
  const std::vector<float> hidden{1.0F, 1.0F, 1.0F};
  EXPECT_EQ(rows.logits(hidden, std::vector<int64_t>{7, 3}),
            (std::vector<double>{1.0, 2.75}));  // a float sum loses the 1
  EXPECT_THROW((void)rows.logits(hidden, std::vector<int64_t>{4}), std::out_of_range);
  EXPECT_THROW((void)rows.logits(std::vector<float>{1.0F}, std::vector<int64_t>{7}), std::invalid_argument);
  EXPECT_THROW(heads::VerbalizerRows({1, 2, 3, 4, 5, 6}, {7, 7}, 3), std::invalid_argument);
  EXPECT_THROW((void)heads::VerbalizerRows::from_file(fixture_dir() / "label_head.safetensors", 64),
               checkpoint::LoadError);
}

class JevVlExportFile : public ScratchDirectoryTest {
 protected:
  void SetUp() override {
    ScratchDirectoryTest::SetUp();
    std::ifstream in(fixture_dir() / jev_vl_export_file);
    base_ = api::Json::parse(in);
  }

  std::string error_of(const api::Json& content) const {
    const auto path = dir_ / jev_vl_export_file;
    std::ofstream(path) << content.dump();
    try {
      (void)read_jev_vl_export(path);
    } catch (const checkpoint::LoadError& error) {
      return error.what();
    }
    return "";
  }

  api::Json base_;
};

TEST_F(JevVlExportFile, RefusesBadMembersNamingThem) {
  EXPECT_EQ(error_of(base_), "");
  const auto changed = [&](const api::Json::json_pointer& at, const api::Json& value) {
    api::Json copy = base_;
    copy[at] = value;
    return error_of(copy);
  };
  EXPECT_NE(changed("/format"_json_pointer, "jev-vl-text-merged/2").find("'format'"), std::string::npos);
  EXPECT_NE(changed("/model_id"_json_pointer, "someone/else").find("'model_id'"), std::string::npos);
  EXPECT_NE(changed("/temperatures/score"_json_pointer, 0.0).find("'score'"), std::string::npos);
  EXPECT_NE(changed("/temperatures/other"_json_pointer, 1.0).find("other"), std::string::npos);
  EXPECT_NE(changed("/slots/ranges/choice"_json_pointer, {8, 23}).find("'choice'"), std::string::npos);
  EXPECT_NE(changed("/verbalizer_bias"_json_pointer, {1.0}).find("'verbalizer_bias'"), std::string::npos);
  EXPECT_NE(changed("/label_ids/0"_json_pointer, 1).find("'label_ids'"), std::string::npos);
  EXPECT_NE(changed("/max_length"_json_pointer, 32769).find("'max_length'"), std::string::npos);
  EXPECT_NE(changed("/label_head/dtype"_json_pointer, "bfloat16").find("'dtype'"), std::string::npos);
  EXPECT_NE(changed("/extra"_json_pointer, 1).find("extra"), std::string::npos);
  EXPECT_EQ(changed("/hf_revision"_json_pointer, "f34b598d4ef4bcefd337bee8d8e7ddd3b7733ccc"), "");
}

// Declared before comparing: the hybrid family's fp32 gate on logits (1e-4 × the logit scale) carried
// through the rows, the slot bias, the temperature and the softmax.
constexpr double answer_tolerance = 1e-4;

TEST(JevVlEngine, AnswersLikeTheReferenceRunningEachQuestionAlone) {
  LoadedModel model = load_model(fixture_dir().string());
  EXPECT_EQ(model.name, "tiny-jev-vl");
  const runtime::ModelInfo info = model.engine->info();
  EXPECT_EQ(info.max_choice_options, 56U);  // the stand-in vocabulary's single-token labels
  EXPECT_EQ(info.context_tokens, 512);
  for (const api::Json& line : read_jsonl(fixture_dir() / "expected.jsonl")) {
    const api::DecisionRequest request = test::typed_request(line["request"]);
    const auto [input_tokens, answers] = test::run_engine(*model.engine, request);
    EXPECT_EQ(input_tokens, line["input_tokens"].get<int64_t>());
    for (std::size_t q = 0; q < request.questions.size(); ++q) {
      const api::Question& question = request.questions[q];
      const api::Json& expected = line["answers"][question.key];
      const api::Answer& got = answers[q];
      switch (got.type) {
        case api::QuestionType::noul:
          EXPECT_NEAR(got.probabilities[0], expected["noul"].get<double>(), answer_tolerance);
          break;
        case api::QuestionType::choice:
          EXPECT_EQ(question.options[got.choice_index].name, expected["choice"].get<std::string>());
          EXPECT_NEAR(got.confidence, expected["confidence"].get<double>(), answer_tolerance);
          for (std::size_t i = 0; i < got.probabilities.size(); ++i) {
            EXPECT_NEAR(got.probabilities[i], expected["probabilities"][question.options[i].name].get<double>(),
                        answer_tolerance);
          }
          break;
        case api::QuestionType::score:
          EXPECT_NEAR(got.score, expected["score"].get<double>(), answer_tolerance);
          EXPECT_NEAR(got.confidence, expected["confidence"].get<double>(), answer_tolerance);
          for (std::size_t i = 0; i < got.probabilities.size(); ++i) {
            EXPECT_NEAR(got.probabilities[i], expected["probabilities"][std::to_string(i)].get<double>(),
                        answer_tolerance);
          }
          break;
      }
    }
  }
  // Ready needs the warm-up to pass: it asks a six-level score.
  EXPECT_NO_THROW((void)test::run_engine(*model.engine, model.engine->warm_up_request()));
}

TEST(JevVlEngine, RefusesLongPromptsAndTooManyOptions) {
  LoadedModel model = load_model(fixture_dir().string());
  const api::Json noul = {{"type", "noul"}, {"instructions", "Ok?"}};
  std::string numbers;
  for (int i = 0; i < 300; ++i) numbers += std::to_string(i * 7919) + " ";
  EXPECT_EQ(test::prepare_refusal(*model.engine, {{"state", numbers}, {"questions", {{"q", noul}}}}),
            api::ErrorCode::max_tokens_exceeded);
  api::Json wide = {{"type", "choice"}, {"criteria", api::Json::object()}};
  for (int i = 0; i < 57; ++i) wide["criteria"]["o" + std::to_string(i)] = nullptr;
  EXPECT_EQ(test::prepare_refusal(*model.engine, {{"state", "s"}, {"questions", {{"q", wide}}}}),
            api::ErrorCode::too_many_options);
}

TEST(JevVlSettings, ReadsIdentityAndPrecisionOnly) {
  checkpoint::ConfigReader empty(api::Json::object(), "s1serve.json");
  const JevVlSettings defaults = read_jev_vl_settings(empty);
  EXPECT_EQ(defaults.name, "autotrust/JEV-27B-VL");
  checkpoint::ConfigReader unknown(api::Json{{"temperature", 2.0}}, "s1serve.json");
  EXPECT_THROW((void)read_jev_vl_settings(unknown), checkpoint::LoadError);
}

TEST(JevVlEngine, ThePrefixCacheChangesNoAnswer) {
  // Cached: the same-kind questions' shared state prefix (text states only; image parts are refused).
  // The fixture's states are shorter than the hybrid's 64-token grid, so a longer one is added.
  LoadedModel plain = load_model(fixture_dir().string());
  LoadedModel cached = load_model(fixture_dir().string());
  std::vector<api::DecisionRequest> requests;
  for (const api::Json& line : test::read_jsonl(fixture_dir() / "expected.jsonl")) {
    requests.push_back(test::typed_request(line["request"]));
  }
  std::string state;
  for (int word = 0; word < 12; ++word) state += "ticket " + std::to_string(word) + " was charged twice; ";
  requests.push_back(test::typed_request(api::Json{
      {"state", state},
      {"questions",
       {{"refund", {{"type", "noul"}, {"instructions", "Does it ask for a refund?"}}},
        {"angry", {{"type", "noul"}, {"instructions", "Is the customer angry?"}}}}}}));
  EXPECT_GT(test::expect_prefix_cache_changes_nothing(*plain.engine, *cached.engine, requests), 0U);
}

}  // namespace
}  // namespace s1::decide
