#include "decide/contracts/decider.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "api/request.h"
#include "decide/contract_table.h"
#include "support/engine_runs.h"
#include "support/fixtures.h"
#include "support/reference_answers.h"
#include "text/tokenizer.h"

namespace s1::decide {
namespace {

using test::read_jsonl;
using test::typed_request;
using test::single_question;

std::filesystem::path fixture_dir() { return test::fixture_dir("tiny-decider"); }

std::vector<int32_t> fixture_label_ids() {
  std::ifstream in(fixture_dir() / "s1serve.json");
  return api::Json::parse(in)["label_token_ids"].get<std::vector<int32_t>>();
}

TEST(DeciderLabels, PinnedIdsAreTheReferenceTable) {
  const auto ids = decider_label_token_ids();
  ASSERT_EQ(ids.size(), 255U);
  EXPECT_EQ(ids[0], 32);    // A
  EXPECT_EQ(ids[25], 57);   // Z
  EXPECT_EQ(ids[26], 5840);  // AA
  EXPECT_EQ(ids[254], 78382);  // JT
  EXPECT_EQ(std::set<int32_t>(ids.begin(), ids.end()).size(), 255U);
}

TEST(DeciderPrompt, StateTextAnnotatesLongArraysOnly) {
  EXPECT_EQ(decider_state_text("as is {\"a\": 1}"), "as is {\"a\": 1}");
  EXPECT_EQ(decider_state_text(api::Json::parse(R"({"b":[1,2,3,4,5,6,7],"a":1e-05})")),
            "{\"b\": [1, 2, 3, 4, 5, 6, 7], \"a\": 1e-05}");
  EXPECT_EQ(decider_state_text(api::Json::parse(R"([0,1,2,3,4,5,{"k":"v","_index":"own"},[8]])")),
            "[{\"_index\": 0, \"value\": 0}, {\"_index\": 1, \"value\": 1}, {\"_index\": 2, \"value\": 2}, "
            "{\"_index\": 3, \"value\": 3}, {\"_index\": 4, \"value\": 4}, {\"_index\": 5, \"value\": 5}, "
            "{\"_index\": \"own\", \"k\": \"v\"}, {\"_index\": 7, \"value\": [8]}]");
}

TEST(DeciderPrompt, StripsALeadingLevelNumberLikePythonRe) {
  EXPECT_EQ(decider_strip_level_number("2: somewhat"), "somewhat");
  EXPECT_EQ(decider_strip_level_number(" \t-10 :\n  low"), "low");
  EXPECT_EQ(decider_strip_level_number("\x1f" "3:x"), "x");                 // U+001F is str.isspace
  EXPECT_EQ(decider_strip_level_number("\xd9\xa3: arabic three"), "arabic three");  // U+0663 is \d
  EXPECT_EQ(decider_strip_level_number("2 somewhat"), "2 somewhat");
  EXPECT_EQ(decider_strip_level_number(": none"), ": none");
  EXPECT_EQ(decider_strip_level_number("-: x"), "-: x");
  EXPECT_EQ(decider_strip_level_number("1.5: x"), "1.5: x");
}

TEST(DeciderPrompt, RowsPerQuestionType) {
  auto choice = decider_rows(single_question(
      R"({"type":"choice","instructions":{"goal":"g"},"criteria":{"a":null,"b":"","c":"desc","d":["x",1]}})"));
  ASSERT_TRUE(choice);
  ASSERT_EQ(choice.value().size(), 1U);
  EXPECT_EQ(choice.value()[0].question, "{\"goal\": \"g\"}");
  EXPECT_EQ(choice.value()[0].options, (std::vector<std::string>{"a", "b", "c: desc", "d: [\"x\", 1]"}));

  auto noul = decider_rows(single_question(R"({"type":"noul","criteria":{"true":"it is"}})"));
  ASSERT_TRUE(noul);
  EXPECT_EQ(noul.value()[0].question, "Which answer fits the context?");
  EXPECT_EQ(noul.value()[0].options, (std::vector<std::string>{"no", "yes: it is"}));

  auto score = decider_rows(single_question(R"({"type":"score","instructions":"How?","criteria":["0: calm",{"x":1}]})"));
  ASSERT_TRUE(score);
  ASSERT_EQ(score.value().size(), 2U);
  EXPECT_EQ(score.value()[0].question, "How?\nProposed answer: calm\nDoes the proposed answer fit?");
  EXPECT_EQ(score.value()[1].question, "How?\nProposed answer: {\"x\": 1}\nDoes the proposed answer fit?");
  EXPECT_EQ(score.value()[1].options, (std::vector<std::string>{"no", "yes"}));
}

TEST(DeciderPrompt, RefusesWhatTheReferenceCannotRender) {
  for (const char* body : {R"({"type":"choice","instructions":"x","criteria":{"only":null}})",
                           R"({"type":"choice","criteria":{"a":null,"b":null}})",
                           R"({"type":"score","instructions":"","criteria":["a","b"]})",
                           R"({"type":"noul"})", R"({"type":"noul","criteria":{"true":"","false":""}})"}) {
    auto rows = decider_rows(single_question(body));
    ASSERT_FALSE(rows) << body;
    EXPECT_EQ(rows.error().code, api::ErrorCode::unsupported_question_type) << body;
  }
}

// Rendered text of the reference's own CPU fixtures (ThinkFlowLab/system1-omni
// tests/decider/data/cpu.json "rendered_state" and "rows"; cases the System One schema admits).
TEST(DeciderPrompt, MatchesTheReferenceRenderedText) {
  const api::DecisionRequest scored = typed_request(api::Json::parse(R"({"state":{"items":[1,{"_index":77,"text":"保留"},1,{"_index":77,"text":"保留"},1,{"_index":77,"text":"保留"},1,{"_index":77,"text":"保留"}]},
      "questions":{"score-id":{"type":"score","instructions":{"ask":"How severe?"},"criteria":[" 0: level 0"," 1: level 1"]}}})"));
  EXPECT_EQ(decider_state_text(scored.state),
            "{\"items\": [{\"_index\": 0, \"value\": 1}, {\"_index\": 77, \"text\": \"保留\"}, {\"_index\": 2, \"value\": 1}, "
            "{\"_index\": 77, \"text\": \"保留\"}, {\"_index\": 4, \"value\": 1}, {\"_index\": 77, \"text\": \"保留\"}, "
            "{\"_index\": 6, \"value\": 1}, {\"_index\": 77, \"text\": \"保留\"}]}");
  auto levels = decider_rows(scored.questions[0]);
  ASSERT_TRUE(levels);
  ASSERT_EQ(levels.value().size(), 2U);
  EXPECT_EQ(levels.value()[1].question,
            "{\"ask\": \"How severe?\"}\nProposed answer: level 1\nDoes the proposed answer fit?");

  const api::DecisionRequest mixed = typed_request(api::Json::parse(R"({"state":{"b":"é","a":[-0.0,1e-05,1e+16,null]},
      "questions":{"first":{"type":"choice","instructions":["Which?",1],"criteria":{"a":null,"b":null}},
                   "second":{"type":"score","instructions":"Level","criteria":["fine","bad"]},
                   "third":{"type":"noul","instructions":null,"criteria":{"false":"fine"}},
                   "fourth":{"type":"noul","criteria":{"true":{"ask":"refund"}}},
                   "fifth":{"type":"choice","instructions":"Pick 中文","criteria":{"候选0":null,"候选1":{"text":"é","n":1}}}}})"));
  EXPECT_EQ(decider_state_text(mixed.state), "{\"b\": \"é\", \"a\": [-0.0, 1e-05, 1e+16, null]}");
  const std::vector<std::pair<std::string, std::vector<std::string>>> expected = {
      {"[\"Which?\", 1]", {"a", "b"}},
      {"Level\nProposed answer: fine\nDoes the proposed answer fit?", {"no", "yes"}},
      {"Level\nProposed answer: bad\nDoes the proposed answer fit?", {"no", "yes"}},
      {"Which answer fits the context?", {"no: fine", "yes"}},
      {"Which answer fits the context?", {"no", "yes: {\"ask\": \"refund\"}"}},
      {"Pick 中文", {"候选0", "候选1: {\"text\": \"é\", \"n\": 1}"}},
  };
  std::vector<DeciderRow> rows;
  for (const api::Question& question : mixed.questions) {
    auto question_rows = decider_rows(question);
    ASSERT_TRUE(question_rows) << question.key;
    rows.insert(rows.end(), question_rows.value().begin(), question_rows.value().end());
  }
  ASSERT_EQ(rows.size(), expected.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].question, expected[i].first) << i;
    EXPECT_EQ(rows[i].options, expected[i].second) << i;
  }
}

TEST(DeciderPrompt, MatchesTransformersGoldens) {
  const text::Tokenizer tokenizer = text::Tokenizer::from_file(fixture_dir() / "tokenizer.json");
  const std::vector<int32_t> labels = fixture_label_ids();
  const auto requests = read_jsonl(fixture_dir() / "requests.jsonl");
  const auto goldens = read_jsonl(fixture_dir() / "prompts.jsonl");
  std::size_t golden = 0;
  for (std::size_t r = 0; r < requests.size(); ++r) {
    const api::DecisionRequest request = typed_request(requests[r]);
    const std::vector<int32_t> context = decider_context_tokens(tokenizer, request.state);
    for (const api::Question& question : request.questions) {
      auto rows = decider_rows(question);
      ASSERT_TRUE(rows) << question.key;
      for (const DeciderRow& row : rows.value()) {
        ASSERT_LT(golden, goldens.size());
        EXPECT_EQ(goldens[golden]["request"], r);
        EXPECT_EQ(goldens[golden]["question"], question.key);
        std::vector<int32_t> ids = context;
        const std::vector<int32_t> piece = decider_question_tokens(tokenizer, row, labels);
        ids.insert(ids.end(), piece.begin(), piece.end());
        EXPECT_EQ(ids, goldens[golden]["ids"].get<std::vector<int32_t>>()) << "request " << r << " " << question.key;
        ++golden;
      }
    }
  }
  EXPECT_EQ(golden, goldens.size());
}

TEST(DeciderPrompt, UniqueTokensCountTheCommonPrefixOnce) {
  EXPECT_EQ(decider_unique_tokens({}), 0);
  EXPECT_EQ(decider_unique_tokens({{1, 2, 3}}), 3);
  EXPECT_EQ(decider_unique_tokens({{1, 2, 3, 4}, {1, 2, 5}, {1, 2, 3, 6, 7}}), 2 + 2 + 1 + 3);
  EXPECT_EQ(decider_unique_tokens({{1, 2}, {1, 2}}), 2);
}

TEST(DeciderReadout, TemperaturePerTypeAndTypeSafeConfidence) {
  const DeciderTemperatures temperatures;
  // Values computed by hand (Python floats) from the formulas of models.md §3.2 and §4.4.
  const std::vector<std::vector<double>> choice_rows = {{2.0, 0.5, 1.0}};
  auto choice = decider_answer(api::QuestionType::choice, choice_rows, temperatures, LogitRounding::none);
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice.value().choice_index, 0U);
  EXPECT_NEAR(choice.value().probabilities[0], 0.5885190696173244, 1e-12);
  EXPECT_NEAR(choice.value().probabilities[1], 0.16221936693548958, 1e-12);
  EXPECT_NEAR(choice.value().confidence, 0.38277860442598655, 1e-12);

  const std::vector<std::vector<double>> noul_rows = {{0.25, 1.5}};  // (no, yes)
  auto noul = decider_answer(api::QuestionType::noul, noul_rows, temperatures, LogitRounding::none);
  ASSERT_TRUE(noul);
  EXPECT_NEAR(noul.value().probabilities[0], 0.6834569532985638, 1e-12);  // true first
  EXPECT_NEAR(noul.value().probabilities[1], 1.0 - 0.6834569532985638, 1e-12);

  const std::vector<std::vector<double>> score_rows = {{-1.0, 2.0}, {0.0, 0.0}, {1.0, -1.0}};
  auto score = decider_answer(api::QuestionType::score, score_rows, temperatures, LogitRounding::none);
  ASSERT_TRUE(score);
  EXPECT_NEAR(score.value().probabilities[0], 0.5920487663089579, 1e-12);
  EXPECT_NEAR(score.value().probabilities[1], 0.3165444377427426, 1e-12);
  EXPECT_NEAR(score.value().probabilities[2], 0.09140679594829937, 1e-12);
  EXPECT_NEAR(score.value().score, 0.49935802963934134, 1e-12);
  EXPECT_NEAR(score.value().confidence, 0.2509629555409879, 1e-12);
}

// The reference's own answer fixtures (ThinkFlowLab/system1-omni tests/decider/data/responses.json:
// BF16-rounded logits per row in, Python-rounded answers out): s1serve's unrounded values must round
// to the same 4 decimals (the score to 2).
struct ReferenceCase {
  const char* name;
  api::QuestionType type;
  std::vector<std::vector<double>> rows;
  std::vector<double> probabilities;  // noul: {P(yes)}
  double confidence;
  double score;
};

TEST(DeciderReadout, MatchesTheReferenceAnswerFixtures) {
  const std::vector<ReferenceCase> cases = {
      {"choice2", api::QuestionType::choice, {{0.0, 0.25}}, {0.4465, 0.5535}, 0.107, 0.0},
      {"choice3", api::QuestionType::choice, {{0.0, 0.25, 0.5}}, {0.2648, 0.3283, 0.4069}, 0.1104, 0.0},
      {"choice10",
       api::QuestionType::choice,
       {{0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 0.0, 0.25, 0.5}},
       {0.0544, 0.0675, 0.0836, 0.1037, 0.1285, 0.1593, 0.1975, 0.0544, 0.0675, 0.0836},
       0.1083,
       0.0},
      {"noul", api::QuestionType::noul, {{1.0, 0.0}}, {0.3507}, 0.0, 0.0},
      {"score2", api::QuestionType::score, {{0.0, 0.0}, {0.0, 0.25}}, {0.4738, 0.5262}, 0.0525, 0.53},
      {"score3", api::QuestionType::score, {{0.0, 0.0}, {0.0, 0.25}, {0.0, 0.5}}, {0.3003, 0.3336, 0.3661}, 0.0, 1.07},
      {"score10",
       api::QuestionType::score,
       {{0.0, 0.0}, {0.0, 0.25}, {0.0, 0.5}, {0.0, 0.75}, {0.0, 1.0}, {0.0, 1.25}, {0.0, 1.5}, {0.0, 1.75},
        {0.0, 2.0}, {0.0, 2.25}},
       {0.07, 0.0778, 0.0853, 0.0925, 0.0993, 0.1054, 0.1108, 0.1157, 0.1198, 0.1234},
       0.0,
       4.99},
  };
  constexpr double half_unit = 0.5e-4 + 1e-9;
  for (const ReferenceCase& c : cases) {
    auto answer = decider_answer(c.type, c.rows, {}, LogitRounding::bf16);
    ASSERT_TRUE(answer) << c.name;
    if (c.type == api::QuestionType::noul) {
      EXPECT_NEAR(answer.value().probabilities[0], c.probabilities[0], half_unit) << c.name;
      continue;
    }
    ASSERT_EQ(answer.value().probabilities.size(), c.probabilities.size()) << c.name;
    for (std::size_t i = 0; i < c.probabilities.size(); ++i) {
      EXPECT_NEAR(answer.value().probabilities[i], c.probabilities[i], half_unit) << c.name << " " << i;
    }
    EXPECT_NEAR(answer.value().confidence, c.confidence, half_unit) << c.name;
    if (c.type == api::QuestionType::score) {
      EXPECT_NEAR(answer.value().score, c.score, 0.005 + 1e-9) << c.name;
    }
  }
}

TEST(DeciderReadout, ScoreFitsThatAllUnderflowStayADistribution) {
  const std::vector<std::vector<double>> rows = {{0.0, -4000.0}, {0.0, -4001.0}};
  auto score = decider_answer(api::QuestionType::score, rows, {}, LogitRounding::none);
  ASSERT_TRUE(score);
  EXPECT_NEAR(score.value().probabilities[0] + score.value().probabilities[1], 1.0, 1e-12);
  EXPECT_GT(score.value().probabilities[0], score.value().probabilities[1]);
}

TEST(DeciderReadout, RoundsLogitsToBf16BeforeTheTemperature) {
  // 1 + 2^-8 is a BF16 tie and rounds to even (1.0), as the reference's BF16 head GEMM leaves it.
  const std::vector<std::vector<double>> rows = {{1.00390625, 1.0}};
  auto rounded = decider_answer(api::QuestionType::choice, rows, {}, LogitRounding::bf16);
  ASSERT_TRUE(rounded);
  EXPECT_DOUBLE_EQ(rounded.value().probabilities[0], 0.5);
  auto kept = decider_answer(api::QuestionType::choice, rows, {}, LogitRounding::none);
  EXPECT_GT(kept.value().probabilities[0], 0.5);
}

TEST(DeciderEngine, AnswersLikeTheTransformersReference) {
  LoadedModel model = load_model(fixture_dir().string());
  EXPECT_EQ(model.name, "tiny-decider");
  const runtime::ModelInfo info = model.engine->info();
  EXPECT_EQ(info.question_types.size(), 3U);
  EXPECT_EQ(info.max_choice_options, 255U);
  EXPECT_GT(test::expect_reference_answers(*model.engine, fixture_dir() / "expected.jsonl", 1e-4), 0U);
}

TEST(DeciderEngine, RefusesLongRowsAndUnrenderableQuestions) {
  LoadedModel model = load_model(fixture_dir().string());
  std::string long_state;
  for (int i = 0; i < 3000; ++i) long_state += "word" + std::to_string(i) + " ";
  auto too_long = model.engine->prepare(
      typed_request({{"state", long_state},
                     {"questions", {{"q", {{"type", "noul"}, {"instructions", "Is it long?"}}}}}}),
      {});
  ASSERT_FALSE(too_long);
  EXPECT_EQ(too_long.error().code, api::ErrorCode::max_tokens_exceeded);
  auto one_option = model.engine->prepare(
      typed_request(api::Json::parse(
          R"({"state":"s","questions":{"q":{"type":"choice","instructions":"x","criteria":{"only":null}}}})")),
      {});
  ASSERT_FALSE(one_option);
  EXPECT_EQ(one_option.error().code, api::ErrorCode::unsupported_question_type);
}

}  // namespace
}  // namespace s1::decide
