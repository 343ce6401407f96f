#include "decide/contracts/startlux.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "api/request.h"
#include "decide/answer_math.h"
#include "decide/contract_common.h"
#include "decide/contract_table.h"
#include "decide/contracts/startlux_prompt.h"
#include "decide/wide_choice.h"
#include "model/checkpoint/load_error.h"
#include "support/engine_runs.h"
#include "support/fixtures.h"
#include "support/prefix_cache_runs.h"
#include "support/reference_answers.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace s1::decide {
namespace {

using test::question_named;
using test::read_jsonl;
using test::typed_request;

std::filesystem::path fixture_dir() { return test::fixture_dir("tiny-startlux"); }

api::Question question_of(const char* json) { return typed_request(api::Json::parse(json)).questions.front(); }

std::vector<std::size_t> positions(std::size_t count) {
  std::vector<std::size_t> out(count);
  for (std::size_t i = 0; i < count; ++i) out[i] = i;
  return out;
}

std::string user_message(const char* request_json) {
  const api::DecisionRequest request = typed_request(api::Json::parse(request_json));
  const StartLuxQuestion record = startlux_question(request.questions.front());
  return startlux_user_message(startlux_state_text(request.state), record, positions(record.options.size()));
}

// A scratch copy of the fixture checkpoint, to break one file at a time.
class ScratchModel {
 public:
  explicit ScratchModel(const std::string& name) : dir_(std::filesystem::temp_directory_path() / name) {
    std::filesystem::remove_all(dir_);
    std::filesystem::copy(fixture_dir(), dir_);
  }
  ~ScratchModel() { std::filesystem::remove_all(dir_); }
  const std::filesystem::path& dir() const { return dir_; }
  void write(const std::string& file, const std::string& text) const { std::ofstream(dir_ / file) << text; }

 private:
  std::filesystem::path dir_;
};

TEST(StartLuxPrompt, TextsFollowPythonRules) {
  EXPECT_EQ(startlux_value_text(api::Json("  spaced\x1c\n")), "spaced");
  EXPECT_EQ(startlux_value_text(api::Json(" \xe3\x80\x80 ")), std::nullopt);  // U+3000 is whitespace
  EXPECT_EQ(startlux_value_text(nullptr), std::nullopt);
  EXPECT_EQ(startlux_value_text(api::Json::parse(R"({"b":[1,1e-05],"a":"é"})")), "{\"b\": [1, 1e-05], \"a\": \"\xc3\xa9\"}");
  EXPECT_EQ(startlux_normalised("  Needs__Review -- Now\t"), "needs review now");
  EXPECT_EQ(startlux_normalised("\xc4\xb0STANBUL"), "i\xcc\x87stanbul");  // İ lowercases to two characters
  EXPECT_EQ(startlux_normalised("\xc3\x89T\xc3\x89"), "\xc3\xa9t\xc3\xa9");
}

TEST(StartLuxPrompt, StateArraysOfEightOrMoreCarryTheirIndex) {
  EXPECT_EQ(startlux_state_text("  as is "), "  as is ");
  EXPECT_EQ(startlux_state_text(api::Json::parse("[1,2,3,4,5,6,7]")), "[1, 2, 3, 4, 5, 6, 7]");
  EXPECT_EQ(startlux_state_text(api::Json::parse(R"({"a":[{"x":1,"_index":"own"},2,3,4,5,6,7,[8]]})")),
            "{\"a\": [{\"_index\": \"own\", \"x\": 1}, {\"_index\": 1, \"value\": 2}, {\"_index\": 2, \"value\": 3}, "
            "{\"_index\": 3, \"value\": 4}, {\"_index\": 4, \"value\": 5}, {\"_index\": 5, \"value\": 6}, "
            "{\"_index\": 6, \"value\": 7}, {\"_index\": 7, \"value\": [8]}]}");
}

TEST(StartLuxPrompt, BareIdsAsPythonsRegexSeesThem) {
  for (const char* bare : {"A", "z", "(b", "c)", "D.", "(e)", "1", "(12)", "123.", "option 2", "Option_10", "OPT3",
                           "opt 999", "\xd9\xa3", "\xe2\x84\xaa", "opt\xc4\xb1on 4"}) {
    EXPECT_TRUE(startlux_is_bare_id(bare)) << bare;
  }
  for (const char* named : {"AB", "1234", "option", "option  2", "opt-2", "a b", "x1", "((a)", "", "1)."}) {
    EXPECT_FALSE(startlux_is_bare_id(named)) << named;
  }
  EXPECT_TRUE(startlux_is_bare_id("(1"));  // \(?\d{1,3} needs no closing parenthesis
}

TEST(StartLuxPrompt, UserMessageLayout) {
  EXPECT_EQ(user_message(R"({"state":{"t":"x"},"questions":{"q":{"type":"choice","instructions":" Which? ",
            "criteria":{"billing":"Billing","needs_review":"Needs review","x":null,"other":"Something else"}}}})"),
            "Evidence:\n{\"t\": \"x\"}\n\nQuestion: Which?\nOptions:\nA) billing\nB) needs_review\nC) x\n"
            "D) other: Something else");
  // Bare ids with a text each are hidden behind it; one option without a text shows them all.
  EXPECT_EQ(user_message(R"j({"state":"s","questions":{"q":{"type":"choice","instructions":"I",
            "criteria":{"A":"Paris","2)":"Rome"}}}})j"),
            "Evidence:\ns\n\nQuestion: I\nOptions:\nA) Paris\nB) Rome");
  EXPECT_EQ(user_message(R"({"state":"s","questions":{"q":{"type":"choice","instructions":"I",
            "criteria":{"A":"Paris","B":null}}}})"),
            "Evidence:\ns\n\nQuestion: I\nOptions:\nA) A: Paris\nB) B");
  // noul: yes then no, a default question, a text equal to the shown name dropped.
  EXPECT_EQ(user_message(R"({"state":" ","questions":{"q":{"type":"noul","criteria":{"true":"It holds","false":"No"}}}})"),
            "Evidence:\n(none)\n\nQuestion: Which answer fits the evidence?\nOptions:\nA) yes: It holds\nB) no");
  EXPECT_EQ(user_message(R"({"state":"s","questions":{"q":{"type":"score","instructions":"How?",
            "criteria":["low",{"k":1}," 2 "]}}})"),
            "Evidence:\ns\n\nQuestion: How?\nOptions:\nA) 0: low\nB) 1: {\"k\": 1}\nC) 2");
  // The head of a wide question's prompts: everything up to "Options:\n".
  const StartLuxQuestion record = startlux_question(question_of(
      R"({"state":"s","questions":{"q":{"type":"choice","instructions":"I","criteria":{"a":null,"b":null}}}})"));
  EXPECT_EQ(startlux_user_message("s", record, {}), "Evidence:\ns\n\nQuestion: I\nOptions:\n");
  const std::vector<std::size_t> reversed{1, 0};
  EXPECT_EQ(startlux_user_message("s", record, reversed), "Evidence:\ns\n\nQuestion: I\nOptions:\nA) b\nB) a");
}

TEST(StartLuxPrompt, RefusesWhatTheRendererRefuses) {
  const auto refusal = [](const char* json) { return startlux_refusal(question_of(json)); };
  const auto missing = refusal(R"({"state":"s","questions":{"q":{"type":"choice","criteria":{"a":null,"b":null}}}})");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->code, api::ErrorCode::validation);
  EXPECT_EQ(missing->issues.front().type, "missing");
  EXPECT_EQ(missing->issues.front().location, (api::Location{"questions", "q", "instructions"}));
  EXPECT_TRUE(refusal(R"({"state":"s","questions":{"q":{"type":"score","instructions":"  ","criteria":["a","b"]}}})"));
  EXPECT_TRUE(refusal(R"({"state":"s","questions":{"q":{"type":"choice","instructions":"I","criteria":{" ":null,"b":null}}}})"));
  const std::string long_name(201, 'x');
  EXPECT_TRUE(refusal(("{\"state\":\"s\",\"questions\":{\"q\":{\"type\":\"choice\",\"instructions\":\"I\",\"criteria\":{\"" +
                       long_name + "\":null,\"b\":null}}}}").c_str()));
  EXPECT_FALSE(refusal(R"({"state":"s","questions":{"q":{"type":"noul"}}})"));
  EXPECT_FALSE(refusal(R"({"state":"s","questions":{"q":{"type":"choice","criteria":{" ":null}}}})"));  // one option
}

// Bytes and token ids of every first-round prompt against Transformers' apply_chat_template and
// tokenizer (tools/reference/make_tiny_startlux.py wrote prompts.jsonl).
TEST(StartLuxPrompt, MatchesTransformersGoldens) {
  const auto requests = read_jsonl(fixture_dir() / "requests.jsonl");
  const auto goldens = read_jsonl(fixture_dir() / "prompts.jsonl");
  const auto chat_template = text::ChatTemplate::from_model_dir(fixture_dir());
  const auto tokenizer = text::Tokenizer::from_file(fixture_dir() / "tokenizer.json");
  for (const api::Json& golden : goldens) {
    const api::DecisionRequest request = typed_request(requests.at(golden["request"].get<std::size_t>()));
    const std::string key = golden["question"].get<std::string>();
    const api::Question& question = question_named(request, key);
    const auto order = golden["row"].get<std::vector<std::size_t>>();
    const std::string prompt = chat_template.render(
        startlux_messages(startlux_state_text(request.state), startlux_question(question), order), true,
        text::Thinking::disabled);
    EXPECT_EQ(prompt, golden["text"].get<std::string>()) << key;
    EXPECT_TRUE(prompt.ends_with(startlux_thinking_off_suffix));
    EXPECT_EQ(encode_without_special_tokens(tokenizer, prompt), golden["ids"].get<std::vector<int32_t>>()) << key;
  }
  EXPECT_EQ(goldens.size(), 35U);
}

TEST(StartLuxReadout, TemperaturePerTypeThenSoftmax) {
  StartLuxDecisionConfig config;
  config.choice_temperature = 0.5;
  config.score_temperature = 2.0;
  // Logits 2, 1, 0 at T = 0.5 are 4, 2, 0: p = e^{4,2,0} / (e^4 + e^2 + 1).
  const std::vector<double> logits{2.0, 1.0, 0.0};
  const double sum = std::exp(4.0) + std::exp(2.0) + 1.0;
  const auto choice = make_answer(api::QuestionType::choice, logits, config.temperature(api::QuestionType::choice),
                                  ConfidenceMethod::linear);
  ASSERT_TRUE(choice);
  EXPECT_NEAR(choice.value().probabilities[0], std::exp(4.0) / sum, 1e-12);
  EXPECT_NEAR(choice.value().probabilities[2], 1.0 / sum, 1e-12);
  EXPECT_NEAR(choice.value().confidence, (3.0 * std::exp(4.0) / sum - 1.0) / 2.0, 1e-12);
  // Score at T = 2: logits 1, 0.5, 0; expected level and TypeSafe's score confidence (mode 0, U = 2/3).
  const auto score = make_answer(api::QuestionType::score, logits, config.temperature(api::QuestionType::score),
                                 ConfidenceMethod::linear);
  const double total = std::exp(1.0) + std::exp(0.5) + 1.0;
  const double p1 = std::exp(0.5) / total;
  const double p2 = 1.0 / total;
  EXPECT_NEAR(score.value().score, p1 + 2.0 * p2, 1e-12);
  EXPECT_NEAR(score.value().confidence, std::max(0.0, 1.0 - (p1 + 2.0 * p2) / (2.0 / 3.0)), 1e-12);
  // Wide answers: first argmax, TypeSafe confidence.
  const api::Answer wide = startlux_choice_from_probabilities({0.1, 0.45, 0.45});
  EXPECT_EQ(wide.choice_index, 1U);
  EXPECT_NEAR(wide.confidence, (3.0 * 0.45 - 1.0) / 2.0, 1e-15);
}

TEST(WideChoice, NearEqualGroups) {
  const auto sizes = [](std::size_t n, std::size_t group) {
    std::vector<std::size_t> out;
    for (const auto& g : wide_choice_groups(positions(n), group)) out.push_back(g.size());
    return out;
  };
  EXPECT_EQ(sizes(27, 25), (std::vector<std::size_t>{14, 13}));
  EXPECT_EQ(sizes(60, 25), (std::vector<std::size_t>{20, 20, 20}));
  EXPECT_EQ(sizes(255, 25), (std::vector<std::size_t>{24, 24, 23, 23, 23, 23, 23, 23, 23, 23, 23}));
  EXPECT_EQ(wide_choice_groups(positions(5), 2), (std::vector<std::vector<std::size_t>>{{0, 1}, {2, 3}, {4}}));
}

TEST(WideChoice, FinalistsAndResidualShare) {
  const std::vector<std::vector<std::size_t>> groups{{0, 1, 2}, {3, 4, 5}};
  const std::vector<std::vector<double>> first{{0.2, 0.5, 0.3}, {0.6, 0.2, 0.2}};
  // Most probable first within each group; the tie between 4 and 5 goes to the earlier.
  EXPECT_EQ(wide_choice_finalists(groups, first, 2), (std::vector<std::size_t>{1, 2, 3, 4}));
  const std::vector<double> first_by_item{0.2, 0.5, 0.3, 0.6, 0.2, 0.2};
  const std::vector<std::size_t> finalists{1, 2, 3, 4};
  const std::vector<double> final_round{0.4, 0.1, 0.3, 0.2};
  const auto combined = wide_choice_combine(first_by_item, finalists, final_round, 0.1);
  // Finalists 0.9 × final; items 0 and 5 split 0.1 by 0.2 : 0.2.
  const std::vector<double> expected{0.05, 0.36, 0.09, 0.27, 0.18, 0.05};
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(combined[i], expected[i], 1e-15) << i;
  // Non-finalists with no first-round mass get nothing; the finalists' share is renormalised to 1.
  const auto zero_rest = wide_choice_combine(std::vector<double>{0.0, 1.0}, std::vector<std::size_t>{1},
                                             std::vector<double>{1.0}, 0.1);
  EXPECT_EQ(zero_rest, (std::vector<double>{0.0, 1.0}));
}

TEST(WideChoice, RoundsRecurseUntilOneRowFits) {
  // 8 options, rows of at most 3, groups of 2, one finalist each, residual 0.1.
  WideChoice rounds(8, 3, WideChoiceConfig{2, 1, 0.1});
  EXPECT_EQ(rounds.rows(), (std::vector<std::vector<std::size_t>>{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  rounds.advance({{0.3, 0.7}, {0.6, 0.4}, {0.5, 0.5}, {0.1, 0.9}});
  // Finalists 1, 2, 4 (tie: the earlier), 7 are still more than 3: a second group round.
  EXPECT_EQ(rounds.rows(), (std::vector<std::vector<std::size_t>>{{1, 2}, {4, 7}}));
  rounds.advance({{0.2, 0.8}, {0.55, 0.45}});
  EXPECT_EQ(rounds.rows(), (std::vector<std::vector<std::size_t>>{{2, 4}}));
  EXPECT_FALSE(rounds.finished());
  rounds.advance({{0.25, 0.75}});
  ASSERT_TRUE(rounds.finished());
  // Second level over options 1, 2, 4, 7: finalists 2, 4 get 0.9 × (0.25, 0.75), options 1 and 7
  // split 0.1 by 0.2 : 0.45. The first level scales those by 0.9 and options 0, 3, 5, 6 split 0.1 by
  // 0.3 : 0.4 : 0.5 : 0.1.
  const double level1[4] = {0.1 * 0.2 / 0.65, 0.9 * 0.25, 0.9 * 0.75, 0.1 * 0.45 / 0.65};
  const std::vector<double> expected{0.1 * 0.3 / 1.3, 0.9 * level1[0], 0.9 * level1[1], 0.1 * 0.4 / 1.3,
                                     0.9 * level1[2], 0.1 * 0.5 / 1.3, 0.1 * 0.1 / 1.3, 0.9 * level1[3]};
  ASSERT_EQ(rounds.probabilities().size(), 8U);
  for (std::size_t i = 0; i < 8; ++i) EXPECT_NEAR(rounds.probabilities()[i], expected[i], 1e-12) << i;
  EXPECT_THROW(rounds.advance({{1.0}}), std::invalid_argument);

  WideChoice narrow(3, 26, WideChoiceConfig{});
  EXPECT_EQ(narrow.rows(), (std::vector<std::vector<std::size_t>>{{0, 1, 2}}));
  EXPECT_THROW(narrow.advance({{0.5, 0.5}}), std::invalid_argument);
}

TEST(WideChoice, SettingsMustNarrowEveryRound) {
  EXPECT_TRUE(wide_choice_terminates(WideChoiceConfig{}, 26, 255));
  EXPECT_FALSE(wide_choice_terminates(WideChoiceConfig{25, 24, 1e-3}, 26, 255));  // 27 options: 27 finalists
  EXPECT_FALSE(wide_choice_terminates(WideChoiceConfig{1, 1, 1e-3}, 26, 255));
  EXPECT_FALSE(wide_choice_terminates(WideChoiceConfig{27, 3, 1e-3}, 26, 255));
}

TEST(StartLuxLoad, DecisionConfigIsReadStrictly) {
  ScratchModel model("s1-startlux-config");
  const auto config = read_startlux_decision_config(model.dir() / "decision_config.json");
  EXPECT_EQ(config.letter_token_ids.size(), 26U);
  EXPECT_EQ(config.choice_temperature, 0.35);
  EXPECT_EQ(config.noul_temperature, 0.6);
  EXPECT_EQ(config.score_temperature, 0.45);
  EXPECT_EQ(config.wide_choice.group, 25U);
  EXPECT_EQ(config.release_date, "2026-10-01");
  const std::string letters = R"("letter_token_ids": [)" + [&] {
    std::string ids;
    for (const int32_t id : config.letter_token_ids) ids += (ids.empty() ? "" : ",") + std::to_string(id);
    return ids;
  }() + "]";
  const auto fails_naming = [&](const std::string& body, const std::string& key) {
    model.write("decision_config.json", "{" + body + "}");
    try {
      read_startlux_decision_config(model.dir() / "decision_config.json");
    } catch (const checkpoint::LoadError& error) {
      return std::string(error.what()).find(key) != std::string::npos;
    }
    return false;
  };
  const std::string temperatures = R"("temperature_by_type": {"choice": 1, "noul": 1, "score": 1})";
  EXPECT_TRUE(fails_naming(temperatures, "letter_token_ids"));
  EXPECT_TRUE(fails_naming(R"("letter_token_ids": [1, 2], )" + temperatures, "letter_token_ids"));
  EXPECT_TRUE(fails_naming(letters + R"(, "temperature_by_type": {"choice": 1, "noul": 1})", "score"));
  EXPECT_TRUE(fails_naming(letters + R"(, "temperature_by_type": {"choice": 1, "noul": 0, "score": 1})", "noul"));
  EXPECT_TRUE(fails_naming(letters + R"(, "temperature_by_type": {"choice": 1, "noul": 1, "score": 1, "span": 1})",
                           "span"));
  EXPECT_TRUE(fails_naming(letters + ", " + temperatures + R"(, "wide_choice": {"group": 25, "keep": 24})", "keep"));
  EXPECT_TRUE(fails_naming(letters + ", " + temperatures + R"(, "wide_choice": {"residual": 1.5})", "residual"));
  EXPECT_TRUE(fails_naming(letters + ", " + temperatures + R"(, "wide_choice": {"rounds": 2})", "rounds"));
  EXPECT_TRUE(fails_naming(letters + ", " + temperatures + R"(, "thinking": true)", "thinking"));
  model.write("decision_config.json", "{" + letters + ", " + temperatures + "}");
  EXPECT_EQ(read_startlux_decision_config(model.dir() / "decision_config.json").wide_choice.keep, 3U);
}

TEST(StartLuxLoad, RefusesOtherVariantsAndWrongLetters) {
  EXPECT_NO_THROW(check_startlux_variant(std::vector<std::string>{"StartLux-Decision-v1.1-4B-Instant", "x127b"}));
  EXPECT_THROW(check_startlux_variant(std::vector<std::string>{"startlux-decision-v1.1-4b-AutoThink"}),
               checkpoint::LoadError);
  EXPECT_THROW(check_startlux_variant(std::vector<std::string>{"x", "StartLux_Decision_27B_Instant"}),
               checkpoint::LoadError);
  {
    ScratchModel autothink("StartLux-Decision-v1.1-4B-Auto-Think");
    EXPECT_THROW(load_model(autothink.dir().string()), ModelLoadError);
  }
  ScratchModel model("s1-startlux-letters");
  const auto config = read_startlux_decision_config(model.dir() / "decision_config.json");
  std::string ids;
  for (std::size_t i = 0; i < 26; ++i) ids += (i ? "," : "") + std::to_string(config.letter_token_ids[i == 0 ? 1 : i]);
  model.write("decision_config.json",
              "{\"letter_token_ids\": [" + ids + "], \"temperature_by_type\": {\"choice\": 1, \"noul\": 1, \"score\": 1}}");
  try {
    load_model(model.dir().string());
    ADD_FAILURE() << "loaded with a wrong letter id";
  } catch (const ModelLoadError& error) {
    EXPECT_NE(std::string(error.what()).find("letter_token_ids[0]"), std::string::npos) << error.what();
  }
}

TEST(StartLuxEngine, AnswersLikeTheTransformersReference) {
  LoadedModel model = load_model(fixture_dir().string());
  EXPECT_EQ(model.name, "tiny-startlux");
  const runtime::ModelInfo info = model.engine->info();
  EXPECT_EQ(info.question_types.size(), 3U);
  EXPECT_EQ(info.max_choice_options, 255U);
  EXPECT_EQ(info.release_date, "2026-10-01");
  EXPECT_EQ(test::expect_reference_answers(*model.engine, fixture_dir() / "expected.jsonl", 1e-5), 21U);
}

TEST(StartLuxEngine, RefusesQuestionsTheRendererCannotShow) {
  LoadedModel model = load_model(fixture_dir().string());
  auto plan = model.engine->prepare(
      typed_request(api::Json::parse(R"({"state":"s","questions":{"ok":{"type":"noul"},
        "bad":{"type":"score","criteria":["lo","hi"]}}})")),
      {});
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().code, api::ErrorCode::validation);
  EXPECT_EQ(plan.error().issues.front().location, (api::Location{"questions", "bad", "instructions"}));
  runtime::PrepareLimits small;
  small.token_budget = 10;
  auto over = model.engine->prepare(typed_request(api::Json::parse(R"({"state":"s","questions":{"q":{"type":"noul"}}})")),
                                    small);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().code, api::ErrorCode::max_tokens_exceeded);
}

TEST(StartLuxEngine, ThePrefixCacheChangesNoAnswer) {
  // Cached: the state prefix of the first round, and of the wide questions' later rounds.
  LoadedModel plain = load_model(fixture_dir().string());
  LoadedModel cached = load_model(fixture_dir().string());
  EXPECT_GT(test::expect_prefix_cache_changes_nothing(*plain.engine, *cached.engine, fixture_dir() / "expected.jsonl"),
            0U);
}

}  // namespace
}  // namespace s1::decide
