#include "decide/contracts/clef.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "api/request.h"
#include "decide/contract_table.h"
#include "decide/prompt.h"
#include "model/checkpoint/checkpoint.h"
#include "model/checkpoint/load_error.h"
#include "model/families.h"
#include "model/heads/joint_schema_head.h"
#include "support/fixtures.h"
#include "support/reference_answers.h"
#include "support/scratch_directory.h"
#include "text/tokenizer.h"

namespace s1::decide {
namespace {

using test::fixture_dir;
using test::read_json;
using test::read_jsonl;
using test::typed_request;

const std::filesystem::path& tiny_clef() {
  static const std::filesystem::path dir = fixture_dir("tiny-clef");
  return dir;
}

// The fixture's max_length (s1serve.json): small enough to reach truncation cheaply.
std::size_t fixture_max_length() { return read_json(tiny_clef() / "s1serve.json")["max_length"].get<std::size_t>(); }

std::vector<api::DecisionRequest> fixture_requests() {
  std::vector<api::DecisionRequest> requests;
  for (const api::Json& body : read_jsonl(tiny_clef() / "requests.jsonl")) requests.push_back(typed_request(body));
  return requests;
}

// Each damaged copy of the fixture in its own folder of the test's scratch directory.
class ClefPackageTest : public test::ScratchDirectoryTest {
 protected:
  std::string load_error(const std::function<void(const std::filesystem::path&)>& damage) {
    const std::filesystem::path copy = dir_ / std::to_string(copies_++);
    std::filesystem::copy(tiny_clef(), copy);
    damage(copy);
    try {
      (void)load_model(copy.string());
    } catch (const ModelLoadError& error) {
      return error.what();
    }
    return "loaded";
  }

 private:
  int copies_ = 0;
};

void edit_json(const std::filesystem::path& file, const std::function<void(api::Json&)>& edit) {
  api::Json value = read_json(file);
  edit(value);
  std::ofstream(file) << value.dump(2);
}

TEST(ClefPrompt, TokenIdsAndSpansMatchTheReference) {
  const text::Tokenizer tokenizer = text::Tokenizer::from_file(tiny_clef() / "tokenizer.json");
  const std::vector<api::DecisionRequest> requests = fixture_requests();
  const std::vector<api::Json> goldens = read_jsonl(tiny_clef() / "prompts.jsonl");
  ASSERT_EQ(goldens.size(), requests.size());
  for (const api::Json& golden : goldens) {
    const auto number = golden["request"].get<std::size_t>();
    SCOPED_TRACE("request " + std::to_string(number));
    const auto prompt = clef_prompt(tokenizer, requests[number], fixture_max_length());
    ASSERT_TRUE(prompt);
    EXPECT_EQ(prompt.value().ids, golden["ids"].get<std::vector<int32_t>>());
    ASSERT_EQ(prompt.value().layout.size(), golden["layout"].size());
    for (std::size_t q = 0; q < prompt.value().layout.size(); ++q) {
      const heads::JointQuestionLayout& mine = prompt.value().layout[q];
      const api::Json& theirs = golden["layout"][q];
      EXPECT_EQ(static_cast<int>(mine.type), theirs["type"].get<int>());
      EXPECT_EQ(mine.question.begin, theirs["question"][0].get<std::size_t>());
      EXPECT_EQ(mine.question.end, theirs["question"][1].get<std::size_t>());
      ASSERT_EQ(mine.options.size(), theirs["options"].size());
      for (std::size_t k = 0; k < mine.options.size(); ++k) {
        EXPECT_EQ(mine.options[k].begin, theirs["options"][k][0].get<std::size_t>());
        EXPECT_EQ(mine.options[k].end, theirs["options"][k][1].get<std::size_t>());
      }
    }
  }
  // The last request's state is cut so that the record fills max_length exactly.
  EXPECT_EQ(goldens.back()["ids"].size(), fixture_max_length());
}

TEST(ClefPrompt, RendersValuesSortedAndCompact) {
  EXPECT_EQ(python_sorted_compact_json(api::Json::parse(R"({"b":[1,2.0,1e-05],"a":{"z":null,"y":"é"}})")),
            R"({"a":{"y":"é","z":null},"b":[1,2.0,1e-05]})");
  const api::DecisionRequest request = typed_request(api::Json::parse(
      R"({"state":"s","questions":{"q":{"type":"choice","criteria":{"b":null,"a":"A","B":{"k":1}}}}})"));
  const std::vector<ClefOption> options = clef_options(request.questions[0]);
  ASSERT_EQ(options.size(), 3U);
  EXPECT_EQ(options[0].id, "B");  // code point order: upper case first
  EXPECT_EQ(options[1].id, "a");
  EXPECT_EQ(options[2].id, "b");
  EXPECT_TRUE(options[2].description.is_null());
  const api::DecisionRequest noul =
      typed_request(api::Json::parse(R"({"state":"s","questions":{"q":{"type":"noul","criteria":{"false":"no"}}}})"));
  const std::vector<ClefOption> sides = clef_options(noul.questions[0]);
  EXPECT_EQ(sides[0].id, "true");
  EXPECT_EQ(sides[0].description, "The proposition is true or the answer is yes.");
  EXPECT_EQ(sides[1].description, "no");
}

TEST(ClefPrompt, RefusesASchemaThatDoesNotFit) {
  const text::Tokenizer tokenizer = text::Tokenizer::from_file(tiny_clef() / "tokenizer.json");
  const api::DecisionRequest request = fixture_requests().front();
  const auto prompt = clef_prompt(tokenizer, request, 100);
  ASSERT_FALSE(prompt);
  EXPECT_EQ(prompt.error().code, api::ErrorCode::max_tokens_exceeded);
}

TEST(JointSchemaHead, LogitsMatchTheReferenceHead) {
  // The reference's own final hidden states of request 0, so only the head's maths is compared.
  const heads::JointHeadConfig config = heads::read_joint_head_config(tiny_clef() / "joint_head_config.json");
  heads::JointSchemaHead head(config, tiny_clef() / "joint_head.safetensors");
  const checkpoint::Checkpoint inputs = checkpoint::Checkpoint::open(tiny_clef() / "head_inputs.safetensors");
  const std::vector<float> hidden = checkpoint::to_float(inputs.get("hidden"));
  const text::Tokenizer tokenizer = text::Tokenizer::from_file(tiny_clef() / "tokenizer.json");
  const auto prompt = clef_prompt(tokenizer, fixture_requests().front(), fixture_max_length());
  ASSERT_TRUE(prompt);
  const auto decoder = model::load_causal_decoder(tiny_clef(), backend::cpu::Precision::fp32);
  const auto logits = head.logits(hidden, prompt.value().ids, prompt.value().layout, decoder->lm_head());
  const api::Json expected = read_jsonl(tiny_clef() / "head.jsonl").front()["logits"];
  ASSERT_EQ(logits.size(), expected.size());
  for (std::size_t q = 0; q < logits.size(); ++q) {
    ASSERT_EQ(logits[q].size(), expected[q].size());
    for (std::size_t k = 0; k < logits[q].size(); ++k) {
      const double reference = expected[q][k].get<double>();
      EXPECT_NEAR(logits[q][k], reference, 1e-5 * std::max(1.0, std::fabs(reference))) << "question " << q;
    }
  }
  EXPECT_THROW((void)head.logits(hidden, prompt.value().ids, {}, decoder->lm_head()), std::invalid_argument);
  std::vector<heads::JointQuestionLayout> outside = prompt.value().layout;
  outside[0].options[0].end = prompt.value().ids.size() + 1;
  EXPECT_THROW((void)head.logits(hidden, prompt.value().ids, outside, decoder->lm_head()), std::invalid_argument);
}

TEST(ClefEngine, AnswersAsTheReference) {
  LoadedModel model = load_model(tiny_clef().string());
  EXPECT_EQ(model.name, "tiny-clef");
  EXPECT_GT(test::expect_reference_answers(*model.engine, tiny_clef() / "expected.jsonl", 5e-5), 10U);
  const runtime::ModelInfo info = model.engine->info();
  EXPECT_EQ(info.context_tokens, static_cast<int64_t>(fixture_max_length()));
  EXPECT_EQ(info.max_choice_options, 255U);
}

TEST_F(ClefPackageTest, RefusesBadHeadFilesNamingTheKey) {
  const std::string config = std::string(clef_head_config_file);
  EXPECT_NE(load_error([&](const auto& dir) {
              edit_json(dir / config, [](api::Json& c) { c["hidden_size"] = 48; });
            }).find("'hidden_size'"),
            std::string::npos);
  EXPECT_NE(load_error([&](const auto& dir) {
              edit_json(dir / config, [](api::Json& c) { c["dropout"] = 0.1; });
            }).find("dropout"),
            std::string::npos);
  EXPECT_NE(
      load_error([&](const auto& dir) { edit_json(dir / config, [](api::Json& c) { c["heads"] = 3; }); }).find("heads"),
      std::string::npos);
  EXPECT_NE(load_error([&](const auto& dir) {
              edit_json(dir / config, [](api::Json& c) { c.erase("layers"); });
            }).find("layers"),
            std::string::npos);
  // A head of more field layers than the weights hold names the missing tensor.
  EXPECT_NE(load_error([&](const auto& dir) {
              edit_json(dir / config, [](api::Json& c) { c["layers"] = 5; });
            }).find("layers.4"),
            std::string::npos);
  // Fewer: the unused tensors are named, never ignored.
  EXPECT_NE(load_error([&](const auto& dir) {
              edit_json(dir / config, [](api::Json& c) { c["layers"] = 3; });
            }).find("layers.3"),
            std::string::npos);
  EXPECT_NE(load_error([](const auto& dir) {
              std::filesystem::remove(dir / clef_head_weights_file);
            }).find("joint_head.safetensors"),
            std::string::npos);
  EXPECT_NE(load_error([](const auto& dir) {
              edit_json(dir / "s1serve.json", [](api::Json& c) { c["max_length"] = 10; });
            }).find("max_length"),
            std::string::npos);
}

}  // namespace
}  // namespace s1::decide
