#include "decide/contracts/clm.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "api/request.h"
#include "decide/contract_table.h"
#include "decide/contracts/embedding_cache.h"
#include "model/checkpoint/load_error.h"
#include "model/heads/clm_head.h"
#include "model/heads/unit_rows.h"
#include "support/engine_runs.h"
#include "support/fixtures.h"
#include "support/prefix_cache_runs.h"
#include "support/reference_answers.h"
#include "text/tokenizer.h"

namespace s1::decide {
namespace {

using test::question_named;
using test::read_jsonl;
using test::typed_request;
using test::single_question;

std::filesystem::path fixture_dir() { return test::fixture_dir("tiny-clm"); }

// A copy of the fixture directory with s1serve.json replaced.
std::filesystem::path fixture_copy_with(const std::string& decision_file) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("clm-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::copy(fixture_dir(), dir);
  std::ofstream(dir / "s1serve.json") << decision_file;
  return dir;
}

TEST(ClmText, RendersValuesAsClmSchemaProse) {
  // clm.schema's own examples (Contrastive-LM/CLM tests/test_schema.py).
  EXPECT_EQ(clm_to_text(nullptr), "");
  EXPECT_EQ(clm_to_text(true), "true");
  EXPECT_EQ(clm_to_text(3), "3");
  EXPECT_EQ(clm_to_text(api::Json::parse(R"({"a":1,"b":"x"})")), "a: 1\n\nb: x");
  EXPECT_EQ(clm_to_text(api::Json::parse(R"({"a":{"b":1,"c":2}})")), "a:\n  b: 1\n  c: 2");
  EXPECT_EQ(clm_to_text(api::Json::parse(R"(["x","y"])")), "- x\n- y");
  EXPECT_EQ(clm_to_text(api::Json::parse(R"([{"k":"v"}])")), "-\n  k: v");
  // Numbers as Python's str(), empty containers as nothing, nesting two spaces a level.
  EXPECT_EQ(clm_to_text(api::Json::parse(R"({"f":1.0,"g":1e-05,"h":[],"i":{},"j":null,"k":[[1,[2]]]})")),
            "f: 1.0\n\ng: 1e-05\n\nh: \n\ni: \n\nj: \n\nk:\n  -\n    - 1\n    -\n      - 2");
}

TEST(ClmText, StateTextPutsTheQuestionAfterTheContextStrippedAsPython) {
  EXPECT_EQ(clm_state_text("Customer: hi", "Is this urgent?"), "Customer: hi\n\nIs this urgent?");
  EXPECT_EQ(clm_state_text("  ", "Is this urgent?"), "Is this urgent?");
  EXPECT_EQ(clm_state_text("Customer: hi", nullptr), "Customer: hi");
  // U+3000 and U+00A0 are Python whitespace; U+200B is not.
  EXPECT_EQ(clm_state_text("\xe3\x80\x80 s\xc2\xa0\n", "\xe2\x80\x8bq"), "s\n\n\xe2\x80\x8bq");
}

TEST(ClmText, CandidateTextsPerQuestionType) {
  EXPECT_EQ(clm_candidate_texts(single_question(R"({"type":"noul","instructions":"Is this urgent?"})")),
            (std::vector<std::string>{"true: Yes. This is true: Is this urgent?",
                                      "false: No. This is false: Is this urgent?"}));
  EXPECT_EQ(clm_candidate_texts(single_question(R"({"type":"noul","instructions":"q","criteria":{"true":"It is urgent."}})")),
            (std::vector<std::string>{"true: It is urgent.", "false: No. This is false: q"}));
  EXPECT_EQ(clm_candidate_texts(single_question(R"({"type":"noul","criteria":{"true":{},"false":""}})")),
            (std::vector<std::string>{"true: ", "false: false"}));
  EXPECT_EQ(clm_candidate_texts(single_question(
                R"({"type":"choice","criteria":{"billing":"A billing issue","tech":"","x":null,"y":{"a":1}}})")),
            (std::vector<std::string>{"A billing issue", "tech", "x", "a: 1"}));
  EXPECT_EQ(clm_candidate_texts(single_question(R"({"type":"score","criteria":["Calm","Frustrated",["a"]]})")),
            (std::vector<std::string>{"Calm", "Frustrated", "- a"}));
}

TEST(ClmText, MatchesTheReferenceTextsAndTokenIds) {
  const auto tokenizer = text::Tokenizer::from_file(fixture_dir() / "tokenizer.json");
  const std::vector<api::Json> requests = read_jsonl(fixture_dir() / "requests.jsonl");
  const std::vector<api::Json> goldens = read_jsonl(fixture_dir() / "prompts.jsonl");
  ASSERT_FALSE(goldens.empty());
  for (const api::Json& golden : goldens) {
    const api::DecisionRequest request = typed_request(requests.at(golden["request"].get<std::size_t>()));
    const std::string key = golden["question"].get<std::string>();
    const api::Question& question = question_named(request, key);
    const std::string state = clm_state_text(request.state, question.instructions);
    EXPECT_EQ(state, golden["state_text"].get<std::string>()) << key;
    EXPECT_EQ(tokenizer.encode(state).ids, golden["state_ids"].get<std::vector<int32_t>>()) << key;
    const std::vector<std::string> texts = clm_candidate_texts(question);
    EXPECT_EQ(texts, golden["candidate_texts"].get<std::vector<std::string>>()) << key;
    for (std::size_t i = 0; i < texts.size(); ++i) {
      EXPECT_EQ(tokenizer.encode(texts[i]).ids, golden["candidate_ids"][i].get<std::vector<int32_t>>()) << texts[i];
    }
  }
}

TEST(ClmReadout, ScaleIsCappedAt100) {
  EXPECT_DOUBLE_EQ(clm_scale(4.6132, 100.0), 100.0);  // exp(4.6132) = 100.8: the published heads hit the cap
  EXPECT_DOUBLE_EQ(clm_scale(2.0, 100.0), std::exp(2.0));
}

TEST(ClmReadout, AnswersFromScaledCosines) {
  // Logits 100·c/2 = (10, 0, -10).
  const std::vector<double> cosines{0.2, 0.0, -0.2};
  const double z = std::exp(10.0) + 1.0 + std::exp(-10.0);
  const std::vector<double> p{std::exp(10.0) / z, 1.0 / z, std::exp(-10.0) / z};
  auto choice = clm_answer(api::QuestionType::choice, cosines, 100.0, 2.0);
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->choice_index, 0U);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_NEAR(choice->probabilities[i], p[i], 1e-15);
  EXPECT_NEAR(choice->confidence, p[0] - (p[1] + p[2]) / 2.0, 1e-15);
  auto score = clm_answer(api::QuestionType::score, cosines, 100.0, 2.0);
  ASSERT_TRUE(score);
  EXPECT_NEAR(score->score, p[1] + 2.0 * p[2], 1e-15);
  EXPECT_NEAR(score->confidence, choice->confidence, 1e-15);
  // noul: label order (true, false); the answer is p(true).
  auto noul = clm_answer(api::QuestionType::noul, std::vector{0.01, 0.03}, 100.0, 1.0);
  ASSERT_TRUE(noul);
  EXPECT_NEAR(noul->probabilities[0], 1.0 / (1.0 + std::exp(2.0)), 1e-15);
  EXPECT_EQ(clm_answer(api::QuestionType::choice, std::vector{NAN, 0.0}, 100.0, 1.0).error().code,
            api::ErrorCode::internal_error);
}

// Both heads' projections of heads.json's inputs against the torch heads'.
void expect_projections_like_torch(const heads::ClmHeads& heads) {
  const api::Json golden = api::Json::parse(std::ifstream(fixture_dir() / "heads.json"));
  std::vector<float> inputs;
  for (const auto& row : golden["inputs"]) {
    for (const auto& value : row) inputs.push_back(value.get<float>());
  }
  for (const auto& [name, head] : {std::pair{"state_head", &heads.state}, std::pair{"action_head", &heads.action}}) {
    const std::vector<float> projected = head->project(inputs);
    ASSERT_EQ(projected.size(), 3U * 16U);
    for (std::size_t r = 0; r < 3; ++r) {
      for (std::size_t c = 0; c < 16; ++c) {
        EXPECT_NEAR(projected[r * 16 + c], golden[name][r][c].get<float>(), 1e-6) << name << " " << r << "," << c;
      }
    }
  }
}

TEST(ClmHeads, ProjectLikeTheTorchHeads) {
  expect_projections_like_torch(heads::load_clm_heads(fixture_dir() / "clm_heads.safetensors", 64, false));
  EXPECT_THROW(heads::load_clm_heads(fixture_dir() / "clm_heads.safetensors", 32, false), checkpoint::LoadError);
  EXPECT_THROW(heads::load_clm_heads(fixture_dir() / "missing.safetensors", 64, false), checkpoint::LoadError);
}

// A head runs on whichever backend its loader is given: the reference backend's plain ops agree.
TEST(ClmHeads, ProjectLikeTheTorchHeadsOnTheReferenceBackend) {
  const auto reference = backend::create_backend("reference");
  expect_projections_like_torch(
      heads::load_clm_heads(fixture_dir() / "clm_heads.safetensors", 64, false, *reference));
}

TEST(EmbeddingCacheMaths, UnitDotAndNormalisation) {
  std::vector<float> rows{3.0F, 4.0F, 0.0F, 0.0F};
  heads::l2_normalize_rows(rows, 2);
  EXPECT_FLOAT_EQ(rows[0], 0.6F);
  EXPECT_FLOAT_EQ(rows[1], 0.8F);
  EXPECT_EQ(rows[2], 0.0F);
  EXPECT_DOUBLE_EQ(unit_vector_dot(std::vector{0.6F, 0.8F}, std::vector{0.6F, 0.8F}),
                   static_cast<double>(0.6F) * 0.6F + static_cast<double>(0.8F) * 0.8F);
}

TEST(ClmEngine, AnswersLikeTheReferenceAndCountsCandidatesEveryTime) {
  LoadedModel model = load_model(fixture_dir().string());
  EXPECT_EQ(model.name, "tiny-clm");
  const runtime::ModelInfo info = model.engine->info();
  EXPECT_EQ(info.context_tokens, 512);
  EXPECT_EQ(info.confidence_method, "top_minus_mean");
  for (int pass = 0; pass < 2; ++pass) {  // the second pass reads every candidate from the cache
    EXPECT_GT(test::expect_reference_answers(*model.engine, fixture_dir() / "expected.jsonl", 1e-5), 0U);
  }
}

TEST(ClmEngine, RefusesEmptyAndOverlongTexts) {
  LoadedModel model = load_model(fixture_dir().string());
  const auto refused = [&](const std::string& body) {
    return test::prepare_refusal(*model.engine, api::Json::parse(body));
  };
  EXPECT_EQ(refused(R"({"state":"s","questions":{"q":{"type":"choice","criteria":{"a":null,"b":[]}}}})"),
            api::ErrorCode::validation);
  EXPECT_EQ(refused(R"({"state":" ","questions":{"q":{"type":"noul"}}})"), api::ErrorCode::validation);
  std::string long_state;
  for (int i = 0; i < 600; ++i) long_state += " word" + std::to_string(i);
  EXPECT_EQ(refused(R"({"state":")" + long_state + R"(","questions":{"q":{"type":"noul"}}})"),
            api::ErrorCode::max_tokens_exceeded);
}

TEST(ClmEngine, DecisionFileErrorsNameTheKey) {
  const auto load_error = [](const std::string& decision_file) {
    const std::filesystem::path dir = fixture_copy_with(decision_file);
    std::string message;
    try {
      load_model(dir.string());
    } catch (const ModelLoadError& error) {
      message = error.what();
    }
    std::filesystem::remove_all(dir);
    return message;
  };
  EXPECT_NE(load_error(R"({"contract":"clm"})").find("logit_scale"), std::string::npos);
  EXPECT_NE(load_error(R"({"contract":"clm","logit_scale":2.0,"temperature":0})").find("temperature"),
            std::string::npos);
  EXPECT_NE(load_error(R"({"contract":"clm","logit_scale":2.0,"append_token":"<no such token>"})").find("append_token"),
            std::string::npos);
  EXPECT_NE(load_error(R"({"contract":"clm","logit_scale":2.0,"heads_file":"nope.safetensors"})").find("nope.safetensors"),
            std::string::npos);
  EXPECT_NE(load_error(R"({"contract":"clm","logit_scale":2.0,"surprise":1})").find("surprise"), std::string::npos);
}

TEST(ClmEngine, ThePrefixCacheChangesNoAnswer) {
  // Cached: the questions' state prefix; candidate texts keep their own cache.
  LoadedModel plain = load_model(fixture_dir().string());
  LoadedModel cached = load_model(fixture_dir().string());
  EXPECT_GT(test::expect_prefix_cache_changes_nothing(*plain.engine, *cached.engine, fixture_dir() / "expected.jsonl"),
            0U);
}

}  // namespace
}  // namespace s1::decide
