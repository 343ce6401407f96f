#include "decide/contracts/vela_decoder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "api/request.h"
#include "decide/contract_table.h"
#include "model/checkpoint/checkpoint.h"
#include "model/checkpoint/config_reader.h"
#include "model/checkpoint/load_error.h"
#include "model/heads/candidate_head.h"
#include "support/engine_runs.h"
#include "support/fixtures.h"
#include "support/prefix_cache_runs.h"
#include "text/tokenizer.h"

namespace s1::decide {
namespace {

using test::read_jsonl;

std::filesystem::path fixture_dir() { return test::fixture_dir("tiny-vela-decoder"); }

TEST(VelaDecoderPrompt, PartsBlocksAndEndpointsMatchTheReferenceLayout) {
  // prompts.jsonl: tools/reference/vela_decoder_contract.py over HF tokenizers, vllm-sr's decoder layout.
  const auto requests = read_jsonl(fixture_dir() / "requests.jsonl");
  const auto tokenizer = text::Tokenizer::from_file(fixture_dir() / "tokenizer.json");
  std::map<std::size_t, VelaTree> trees;
  std::size_t questions = 0;
  for (const api::Json& golden : read_jsonl(fixture_dir() / "prompts.jsonl")) {
    const auto number = golden["request"].get<std::size_t>();
    const api::DecisionRequest request = test::typed_request(requests.at(number));
    if (!trees.contains(number)) {
      auto tree = vela_render_tree(tokenizer, request, 1200);
      ASSERT_TRUE(tree) << number;
      trees.emplace(number, std::move(tree.value()));
    }
    const VelaTree& tree = trees.at(number);
    const std::string key = golden["question"].get<std::string>();
    std::size_t q = 0;
    while (request.questions[q].key != key) ++q;
    EXPECT_EQ(tree.prefix, golden["prefix"].get<std::vector<int32_t>>()) << number;
    EXPECT_EQ(tree.state_tokens, golden["state_tokens"].get<std::size_t>()) << number;
    EXPECT_EQ(tree.blocks[q].tokens, golden["block"].get<std::vector<int32_t>>()) << key;
    EXPECT_EQ(tree.blocks[q].endpoints, golden["endpoints"].get<std::vector<std::size_t>>()) << key;
    EXPECT_EQ(tree.blocks[q].real_options, golden["real_options"].get<std::size_t>()) << key;
    ++questions;
  }
  EXPECT_EQ(questions, 14U);
  // The long state of request 5 is cut to fit max_length; the others are whole.
  EXPECT_LT(trees.at(5).prefix.size(), trees.at(5).state_tokens);
}

TEST(VelaDecoderPrompt, BlockTextsAsTheLayoutSpellsThem) {
  const api::Question question = test::single_question(
      R"({"type": "choice", "instructions": "Pick \"one\"", "criteria": {"b": "B é", "a": null}})");
  const std::vector<std::string> pieces = vela_block_pieces(question, {"user", "answer"});
  ASSERT_EQ(pieces.size(), 5U);
  EXPECT_EQ(pieces[0], "\n\nTask type: choice\nTarget: user, answer\nQuestion:\nPick \"one\"\nOptions:");
  EXPECT_EQ(pieces[1], "\n<option>\n{\"description\":\"B é\",\"key\":\"b\"}\n</option>");
  EXPECT_EQ(pieces[2], "\n<option>\n{\"description\":\"\",\"key\":\"a\"}\n</option>");
  EXPECT_EQ(pieces[3],
            "\n<option>\n{\"description\":\"None of the shown options applies.\",\"key\":\"[ABS]\"}\n</option>");
  EXPECT_EQ(pieces[4], "\n\nSelect the single option best supported by the context and instructions.\nDecision:");
  // noul reads as a two-option choice with the runtime's default texts, [ABS] included.
  const std::vector<std::string> noul = vela_block_pieces(
      test::single_question(R"({"type": "noul", "instructions": "Ok?", "criteria": {"true": "yes"}})"), {"user"});
  ASSERT_EQ(noul.size(), 5U);
  EXPECT_EQ(noul[0], "\n\nTask type: choice\nTarget: user\nQuestion:\nOk?\nOptions:");
  EXPECT_EQ(
      noul[1],
      "\n<option>\n{\"description\":\"No. The statement or question is not satisfied.\",\"key\":\"no\"}\n</option>");
  EXPECT_EQ(noul[2], "\n<option>\n{\"description\":\"yes\",\"key\":\"yes\"}\n</option>");
  // score: the levels name the options, with no description and no [ABS].
  const std::vector<std::string> score = vela_block_pieces(
      test::single_question(R"({"type": "score", "instructions": {"k": 1}, "criteria": ["low", "high"]})"), {"user"});
  ASSERT_EQ(score.size(), 4U);
  EXPECT_EQ(score[0], "\n\nTask type: score\nTarget: user\nQuestion:\n{\"k\": 1}\nOptions:");
  EXPECT_EQ(score[2], "\n<option>\n{\"description\":\"\",\"key\":\"high\"}\n</option>");
}

// A safetensors file of fp32 tensors, for hand-sized heads.
void write_safetensors(const std::filesystem::path& path,
                       const std::map<std::string, std::pair<std::vector<int64_t>, std::vector<float>>>& tensors) {
  api::Json header = api::Json::object();
  std::size_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    const std::size_t bytes = tensor.second.size() * sizeof(float);
    header[name] = {{"dtype", "F32"}, {"shape", tensor.first}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  const std::string text = header.dump();
  std::ofstream out(path, std::ios::binary);
  const uint64_t length = text.size();
  out.write(reinterpret_cast<const char*>(&length), sizeof(length));
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& [name, tensor] : tensors) {
    out.write(reinterpret_cast<const char*>(tensor.second.data()),
              static_cast<std::streamsize>(tensor.second.size() * sizeof(float)));
  }
}

TEST(VelaCandidateHead, NormsThenBilinearPlusGeluMlp) {
  // hidden 2, head_dim 4. LayerNorm of a 2-vector is ±(1, −1) (times 1/√(1 + 1e-5)).
  // c₁ = (3, 1) → (1, −1), c₂ = (0, 2) → (−1, 1); q = (5, −5) → (1, −1) + bias (0, 0.5) = (1, −0.5).
  // K c₁ = (1, −1, 0, 0), Q q = (1, −0.5, 0, 0.5): bilinear₁ = 1.5 / √4 = 0.75, bilinear₂ = −0.75.
  // Mq q = (2·(−0.5), 0, 0, 0) = (−1, 0, 0, 0); Mc c + bc + Mq q = (0, 1, 0, 0) and (−2, 1, 0, 0);
  // w·GELU with w = (1, 2, 0, 0): 2·GELU(1) = 1.6826895 and GELU(−2) + 2·GELU(1) = −0.0455003 + 1.6826895.
  const std::filesystem::path path = std::filesystem::path(testing::TempDir()) / "vela_candidate_head.safetensors";
  write_safetensors(path, {{"head.candidate_norm.weight", {{2}, {1, 1}}},
                           {"head.candidate_norm.bias", {{2}, {0, 0}}},
                           {"head.query_norm.weight", {{2}, {1, 1}}},
                           {"head.query_norm.bias", {{2}, {0, 0.5F}}},
                           {"head.key.weight", {{4, 2}, {1, 0, 0, 1, 1, 1, 0, 0}}},
                           {"head.query.weight", {{4, 2}, {1, 0, 0, 1, 0, 0, 1, 1}}},
                           {"head.candidate_mlp.weight", {{4, 2}, {1, 0, 0, 0, 0, 0, 0, 0}}},
                           {"head.candidate_mlp.bias", {{4}, {0, 1, 0, 0}}},
                           {"head.query_mlp.weight", {{4, 2}, {0, 2, 0, 0, 0, 0, 0, 0}}},
                           {"head.scalar.weight", {{1, 4}, {1, 2, 0, 0}}}});
  const checkpoint::Checkpoint weights = checkpoint::Checkpoint::open(path);
  const heads::CandidateHead head(weights, "head.", 2);
  EXPECT_EQ(head.head_dim(), 4U);
  const std::vector<float> logits = head.logits(std::vector<float>{5, -5}, std::vector<float>{3, 1, 0, 2});
  ASSERT_EQ(logits.size(), 2U);
  EXPECT_NEAR(logits[0], 0.75 + 1.6826895, 1e-4);
  EXPECT_NEAR(logits[1], -0.75 - 0.0455003 + 1.6826895, 1e-4);
  EXPECT_THROW((void)head.logits(std::vector<float>{1}, std::vector<float>{1, 2}), std::invalid_argument);
  EXPECT_THROW(heads::CandidateHead(weights, "head.", 3), checkpoint::LoadError);
  EXPECT_THROW(heads::CandidateHead(weights, "other.", 2), checkpoint::LoadError);
}

// Declared before comparing: the hybrid family's fp32 gate on logits, 1e-4 × the logit scale (the
// largest |logit| of the question, at least 1), and 1e-4 on probabilities.
constexpr double tolerance = 1e-4;

TEST(VelaDecoderEngine, OneTreeAnswersLikeTheReferenceRunBlockByBlock) {
  LoadedModel model = load_model(fixture_dir().string());
  EXPECT_EQ(model.name, "tiny-vela-decoder");
  const runtime::ModelInfo info = model.engine->info();
  EXPECT_EQ(info.context_tokens, 1200);
  EXPECT_EQ(info.confidence_method, "top2_margin");
  const auto heads = read_jsonl(fixture_dir() / "heads.jsonl");
  const auto lines = read_jsonl(fixture_dir() / "expected.jsonl");
  ASSERT_EQ(heads.size(), lines.size());
  for (std::size_t n = 0; n < lines.size(); ++n) {
    const api::DecisionRequest request = test::typed_request(lines[n]["request"]);
    auto plan = model.engine->prepare(request, {});
    ASSERT_TRUE(plan) << n;
    EXPECT_EQ(plan.value()->input_tokens, lines[n]["input_tokens"].get<int64_t>()) << n;
    auto raw = model.engine->run(*plan.value());
    ASSERT_TRUE(raw) << n;
    for (std::size_t q = 0; q < request.questions.size(); ++q) {
      const auto expected = heads[n]["logits"][q].get<std::vector<double>>();
      const std::vector<double>& got = raw.value().label_scores[q];
      ASSERT_LE(got.size(), expected.size()) << n << " " << q;
      double scale = 1.0;
      for (const double logit : expected) scale = std::max(scale, std::abs(logit));
      for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], tolerance * scale) << n << " " << q;
    }
    auto answers = model.engine->finish(request, *plan.value(), std::move(raw.value()));
    ASSERT_TRUE(answers) << n;
    for (std::size_t q = 0; q < request.questions.size(); ++q) {
      const api::Json& expected = lines[n]["answers"][request.questions[q].key];
      const api::Answer& got = answers.value()[q];
      if (request.questions[q].type == api::QuestionType::noul) {
        EXPECT_NEAR(got.probabilities[0], expected["noul"].get<double>(), tolerance) << n;
        continue;
      }
      EXPECT_NEAR(got.confidence, expected["confidence"].get<double>(), tolerance) << n;
      if (request.questions[q].type == api::QuestionType::choice) {
        EXPECT_EQ(request.questions[q].options[got.choice_index].name, expected["choice"].get<std::string>());
      }
    }
  }
}

TEST(VelaDecoderEngine, RefusesQuestionsAloneOverMaxLength) {
  LoadedModel model = load_model(fixture_dir().string());
  api::Json many = api::Json::object();
  for (int i = 0; i < 12; ++i) many["q" + std::to_string(i)] = {{"type", "noul"}, {"instructions", "Is it fine?"}};
  EXPECT_EQ(test::prepare_refusal(*model.engine, {{"state", "short"}, {"questions", many}}),
            api::ErrorCode::max_tokens_exceeded);
  many.erase("q11");
  for (int i = 1; i < 11; ++i) many.erase("q" + std::to_string(i));
  EXPECT_EQ(test::prepare_refusal(*model.engine, {{"state", "short"}, {"questions", many}}),
            api::ErrorCode::internal_error);
}

TEST(VelaDecoderSettings, ReadsIdentityPrecisionAndMaxLength) {
  const auto settings_of = [](const char* json) {
    checkpoint::ConfigReader reader(api::Json::parse(json), "s1serve.json");
    return read_vela_decoder_settings(reader);
  };
  const VelaDecoderSettings settings = settings_of(R"({"max_length": 512})");
  EXPECT_EQ(settings.name, "vela-2.0-0.8b");
  EXPECT_EQ(settings.max_length, 512U);
  EXPECT_EQ(settings_of("{}").max_length, 16384U);
  EXPECT_THROW((void)settings_of(R"({"max_length": 0})"), checkpoint::LoadError);
  EXPECT_THROW((void)settings_of(R"({"abstain_types": []})"), checkpoint::LoadError);
}

TEST(VelaDecoderEngine, ThePrefixCacheChangesNoAnswer) {
  // Cached: the parts' whole chunks before the question blocks.
  LoadedModel plain = load_model(fixture_dir().string());
  LoadedModel cached = load_model(fixture_dir().string());
  EXPECT_GT(test::expect_prefix_cache_changes_nothing(*plain.engine, *cached.engine, fixture_dir() / "expected.jsonl"),
            0U);
}

}  // namespace
}  // namespace s1::decide
