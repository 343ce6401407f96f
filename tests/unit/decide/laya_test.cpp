// The LAYA contract against laya==0.3.20 itself (tools/reference/laya_contract.py on the tiny stand-in
// tests/fixtures/tiny-laya): packing token ids and markers exactly; the readout (temperature buckets,
// clamp, float32 softmax, confidences, 4-decimal rounding) exactly from laya's own logits; the model's
// marker logits and act probabilities within 1e-4 (fp32, tiny random weights stored as fp16; bf16 within
// a measured bound); and the engine's answers within one rounding step (1e-4), decisions equal.

#include "decide/contracts/laya.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "api/request.h"
#include "backend/cpu/linear.h"
#include "decide/contract_table.h"
#include "model/checkpoint/load_error.h"
#include "support/engine_runs.h"
#include "support/fixtures.h"
#include "support/reference_answers.h"
#include "text/tokenizer.h"

namespace s1::decide {
namespace {

using test::read_jsonl;
using test::typed_request;
using test::question_named;

std::filesystem::path fixture_dir() { return test::fixture_dir("tiny-laya"); }

constexpr double model_tolerance = 1e-4;
constexpr double bf16_logit_tolerance = 0.1;
constexpr double bf16_act_tolerance = 0.015;
constexpr double wire_tolerance = 1e-4 + 1e-9;  // one step of the 4-decimal rounding

TEST(LayaPacking, MatchesLayaTokenIdsAndMarkers) {
  const auto tokenizer = text::Tokenizer::from_file(fixture_dir() / "tokenizer" / "tokenizer.json");
  LayaPacking packing;
  packing.cls = *tokenizer.token_to_id("[CLS]");
  packing.sep = *tokenizer.token_to_id("[SEP]");
  packing.mask = *tokenizer.token_to_id("[MASK]");
  const std::vector<api::Json> requests = read_jsonl(fixture_dir() / "requests.jsonl");
  const std::vector<api::Json> rows = read_jsonl(fixture_dir() / "packing.jsonl");
  ASSERT_FALSE(rows.empty());
  for (const api::Json& expected : rows) {
    const api::Json& body = requests.at(expected["request"].get<std::size_t>());
    const api::DecisionRequest request = typed_request(body);
    const std::string key = expected["question"].get<std::string>();
    const std::vector<int32_t> state = laya_state_ids(tokenizer, request.state);
    auto row = laya_pack_question(tokenizer, packing, state, request.state.is_array(), question_named(request, key));
    ASSERT_TRUE(row) << row.error().message;
    EXPECT_EQ(row.value().ids, expected["ids"].get<std::vector<int32_t>>()) << "request " << expected["request"] << " " << key;
    EXPECT_EQ(row.value().markers, expected["markers"].get<std::vector<std::size_t>>()) << key;
    EXPECT_EQ(static_cast<int>(row.value().kind), expected["qtype"].get<int>()) << key;
  }
}

TEST(LayaPacking, OptionsPastTheRowAreRefused) {
  const auto tokenizer = text::Tokenizer::from_file(fixture_dir() / "tokenizer" / "tokenizer.json");
  LayaPacking packing;
  api::Json body = api::Json::parse(R"({"state":"s","questions":{"wide":{"type":"choice","criteria":{}}}})");
  for (int i = 0; i < 200; ++i) body["questions"]["wide"]["criteria"]["option " + std::to_string(i)] = nullptr;
  const api::DecisionRequest request = typed_request(body);
  auto row = laya_pack_question(tokenizer, packing, {}, false, request.questions[0]);
  ASSERT_FALSE(row);
  EXPECT_EQ(row.error().code, api::ErrorCode::too_many_options);
}

TEST(LayaReadout, RoundsLikePython) {
  EXPECT_EQ(round_to_4_decimals(0.03125), 0.0312);   // an exact half: to even
  EXPECT_EQ(round_to_4_decimals(0.00015), 0.0001);   // 0.00015 is stored just below the half
  EXPECT_EQ(round_to_4_decimals(0.99996), 1.0);
  EXPECT_EQ(round_to_4_decimals(-0.00001), 0.0);
}

TEST(LayaReadout, TemperatureBucketsFallBackAndClamp) {
  laya::AgentConfig config;
  config.temperature = {1.3, 0.8, 2.0};
  config.temperature_by_options = {{"choice:3-5", 1.7}, {"choice:11+", 0.1006}, {"noul:2", 7.5}};
  EXPECT_EQ(laya_temperature(config, laya::QuestionKind::choice, 2), 1.3);
  EXPECT_EQ(laya_temperature(config, laya::QuestionKind::choice, 5), 1.7);
  EXPECT_EQ(laya_temperature(config, laya::QuestionKind::choice, 6), 1.3);
  EXPECT_EQ(laya_temperature(config, laya::QuestionKind::choice, 12), 0.5);
  EXPECT_EQ(laya_temperature(config, laya::QuestionKind::noul, 2), 5.0);
  EXPECT_EQ(laya_temperature(config, laya::QuestionKind::score, 10), 0.8);
}

TEST(LayaReadout, AnswersEqualLayasFromItsLogits) {
  const laya::AgentConfig config = laya::read_agent_config(fixture_dir() / "rl_agent_config.json");
  const std::vector<api::Json> heads = read_jsonl(fixture_dir() / "heads.jsonl");
  ASSERT_FALSE(heads.empty());
  for (const api::Json& head : heads) {
    const api::Json& expected = head["answer"];
    const std::string type = expected["type"].get<std::string>();
    const laya::QuestionKind kind = type == "choice" ? laya::QuestionKind::choice
                                    : type == "score" ? laya::QuestionKind::score
                                                      : laya::QuestionKind::noul;
    const std::vector<float> logits = head["logits"].get<std::vector<float>>();
    auto answer = laya_answer(kind, logits, laya_temperature(config, kind, logits.size()));
    ASSERT_TRUE(answer);
    const std::string where = head["question"].get<std::string>();
    EXPECT_EQ(answer.value().confidence, expected["confidence"].get<double>()) << where;
    if (kind == laya::QuestionKind::noul) {
      EXPECT_EQ(answer.value().probabilities[0], expected["noul"].get<double>()) << where;
      continue;
    }
    std::size_t i = 0;
    for (const auto& [label, p] : expected["probabilities"].items()) {
      EXPECT_EQ(answer.value().probabilities.at(i++), p.get<double>()) << where << "/" << label;
    }
    if (kind == laya::QuestionKind::score) {
      EXPECT_EQ(answer.value().score, expected["score"].get<double>()) << where;
    }
  }
}

// The model's marker logits and act probabilities for every fixture request, one batch per request
// as the engine runs them, against laya's (fp32): logits within `logit_tolerance` (relative above 1),
// act probabilities within `act_tolerance`.
void expect_heads_like_laya(backend::Arithmetic arithmetic, double logit_tolerance, double act_tolerance) {
  laya::LayaModel model(fixture_dir(), arithmetic);
  const std::vector<api::Json> packing = read_jsonl(fixture_dir() / "packing.jsonl");
  const std::vector<api::Json> heads = read_jsonl(fixture_dir() / "heads.jsonl");
  // One batch per request, as the engine runs them.
  std::map<std::size_t, std::vector<std::size_t>> by_request;
  for (std::size_t i = 0; i < packing.size(); ++i) by_request[packing[i]["request"].get<std::size_t>()].push_back(i);
  for (const auto& [request, indices] : by_request) {
    std::vector<std::vector<int32_t>> ids;
    std::vector<std::vector<std::size_t>> markers;
    std::vector<laya::Row> rows;
    for (const std::size_t i : indices) {
      ids.push_back(packing[i]["ids"].get<std::vector<int32_t>>());
      markers.push_back(packing[i]["markers"].get<std::vector<std::size_t>>());
    }
    for (std::size_t r = 0; r < indices.size(); ++r) {
      rows.push_back(laya::Row{ids[r], markers[r], static_cast<laya::QuestionKind>(packing[indices[r]]["qtype"].get<int>())});
    }
    const auto logits = model.marker_logits(rows);
    const auto act = model.act_probabilities();
    ASSERT_EQ(logits.size(), indices.size());
    for (std::size_t r = 0; r < indices.size(); ++r) {
      const api::Json& expected = heads[indices[r]];
      const auto expected_logits = expected["logits"].get<std::vector<double>>();
      ASSERT_EQ(logits[r].size(), expected_logits.size());
      for (std::size_t m = 0; m < expected_logits.size(); ++m) {
        EXPECT_NEAR(logits[r][m], expected_logits[m], logit_tolerance * std::max(1.0, std::fabs(expected_logits[m])))
            << "request " << request << " " << expected["question"] << " marker " << m;
      }
      EXPECT_NEAR(act[r], expected["act_probability"].get<double>(), act_tolerance) << expected["question"];
    }
  }
}

TEST(LayaModel, MarkerLogitsAndActProbabilitiesMatchLaya) {
  expect_heads_like_laya(backend::Arithmetic::fp32, model_tolerance, model_tolerance);
}

// bf16 rounds every matmul's input and the Q/K/V, Wi and head feed-forward outputs (as torch's bf16
// autocast does). Measured on this fixture: logits within 0.046 (relative above 1), act
// probabilities within 0.006; the bounds leave about 2x.
TEST(LayaModel, Bf16MarkerLogitsAndActProbabilitiesNearLaya) {
  if (!backend::cpu::linear_supported(backend::cpu::Precision::bf16)) GTEST_SKIP() << "bf16 needs AVX-512";
  expect_heads_like_laya(backend::Arithmetic::bf16, bf16_logit_tolerance, bf16_act_tolerance);
}

TEST(LayaEngine, AnswersLikeLaya) {
  LoadedModel model = load_model(fixture_dir().string());
  EXPECT_EQ(model.name, "tiny-laya");
  EXPECT_EQ(model.engine->info().confidence_method, "entropy");
  EXPECT_GT(test::expect_reference_answers(*model.engine, fixture_dir() / "expected.jsonl", wire_tolerance), 0U);
}

TEST(LayaEngine, RefusesTooManyQuestionsAndMarkers) {
  LoadedModel model = load_model(fixture_dir().string());
  const auto refused = [&](const api::Json& body) {
    return test::prepare_refusal(*model.engine, body);
  };
  api::Json body = api::Json::parse(R"({"state":"s","questions":{}})");
  for (int i = 0; i < 17; ++i) body["questions"]["q" + std::to_string(i)] = {{"type", "noul"}};
  EXPECT_EQ(refused(body), api::ErrorCode::payload_too_large);
  body["questions"].erase("q16");
  EXPECT_TRUE(model.engine->prepare(typed_request(body), {}));
}

TEST(LayaSettings, DefaultsAndErrorsNameTheKey) {
  const auto read = [](const char* text) {
    checkpoint::ConfigReader reader(nlohmann::ordered_json::parse(text), "s1serve.json");
    return read_laya_settings(reader);
  };
  const LayaSettings defaults = read("{}");
  EXPECT_EQ(defaults.name, "laya-english");
  EXPECT_EQ(defaults.aliases, std::vector<std::string>{"english"});
  EXPECT_EQ(defaults.precision, backend::cpu::Precision::fp32);
  const LayaSettings set = read(R"({"name":"x","aliases":[],"precision":"fp32","max_questions":4})");
  EXPECT_EQ(set.name, "x");
  EXPECT_TRUE(set.aliases.empty());
  EXPECT_EQ(set.max_questions, 4U);
  for (const char* bad : {R"({"name":""})", R"({"precision":"fp16"})", R"({"max_markers":0})", R"({"temperature":1})"}) {
    try {
      (void)read(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const checkpoint::LoadError& error) {
      EXPECT_NE(std::string(error.what()).find("s1serve.json"), std::string::npos) << error.what();
    }
  }
}

}  // namespace
}  // namespace s1::decide
