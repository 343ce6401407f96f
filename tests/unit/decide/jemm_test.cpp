#include "decide/contracts/jemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "api/request.h"
#include "decide/contract_common.h"
#include "decide/contract_table.h"
#include "decide/python_text.h"
#include "support/engine_runs.h"
#include "support/fixtures.h"
#include "support/reference_answers.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace s1::decide {
namespace {

using test::read_jsonl;
using test::typed_request;
using test::single_question;

std::filesystem::path fixture_dir() { return test::fixture_dir("tiny-jemm"); }

TEST(JemmPythonText, MatchesPythonStrReprAndSplit) {
  const auto cases = read_jsonl(fixture_dir() / "python_coercion.jsonl");
  ASSERT_GE(cases.size(), 25U);
  for (const api::Json& example : cases) {
    const api::Json& value = example["value"];
    EXPECT_EQ(python_str(value), example["str"].get<std::string>()) << value.dump();
    EXPECT_EQ(python_repr(value), example["repr"].get<std::string>()) << value.dump();
    EXPECT_EQ(python_flatten_whitespace(python_str(value)), example["flat"].get<std::string>()) << value.dump();
  }
}

TEST(JemmPythonText, StripAndCodePointPrefix) {
  EXPECT_EQ(python_strip(" \x1c\t a b \xe3\x80\x80\n"), "a b");
  EXPECT_EQ(python_strip("\xc2\xa0"), "");
  EXPECT_EQ(python_prefix("caf\xc3\xa9!", 4), "caf\xc3\xa9");
  EXPECT_EQ(python_prefix("ab", 24), "ab");
}

TEST(JemmPrompt, UserMessageLayout) {
  const auto messages = jemm_messages(api::Json::parse(R"({"b":[1,2.5],"a":"é"})"),
                                      single_question(R"({"type":"choice","instructions":"Pick\n  one.",
                                                      "criteria":{"x":"Go  left","y":null}})"));
  ASSERT_EQ(messages.size(), 2U);
  EXPECT_EQ(messages[0].role, "system");
  EXPECT_EQ(messages[0].content, jemm_system_message());
  EXPECT_EQ(messages[1].content,
            "State:\n{\"b\":[1,2.5],\"a\":\"\xc3\xa9\"}\n\nQuestion: Pick one.\n\nCandidates:\nA) Go left\nB) \n\n"
            "Answer with exactly one candidate label.");
}

TEST(JemmPrompt, CandidatesOfEachQuestionType) {
  EXPECT_EQ(jemm_candidate_texts(single_question(R"({"type":"noul"})")), (std::vector<std::string>{"yes", "no"}));
  EXPECT_EQ(jemm_candidate_texts(single_question(R"({"type":"noul","criteria":{"false":{"description":"not  so"}}})")),
            (std::vector<std::string>{"yes", "not so"}));
  EXPECT_EQ(jemm_candidate_texts(single_question(R"({"type":"score","criteria":["low",{"x":1},["a",true]]})")),
            (std::vector<std::string>{"low", "level 1", "['a', True]"}));
  std::string wide = R"({"type":"choice","criteria":{)";
  for (int i = 0; i < 33; ++i) wide += (i > 0 ? ",\"o" : "\"o") + std::to_string(i) + "\":null";
  EXPECT_THROW(jemm_messages("s", single_question((wide + "}}").c_str())), std::invalid_argument);
}

TEST(JemmPrompt, ToolSpecCandidates) {
  EXPECT_EQ(jemm_tool_text(R"({"name":"f","description":"Does\n f.","parameters":{"type":"object",
              "properties":{"a":{"type":"string"},"b":{"default":1.5},"c":{"default":""},"d":{"default":null}},
              "required":["a",3]}})"),
            "f \u2014 Does f. | params: a*, b=1.5, c, d");
  EXPECT_EQ(jemm_tool_text(R"({"name":"g","parameters":{"type":"object","x":{"default":false}}})"),
            "g | params: x=False");
  EXPECT_EQ(jemm_tool_text(R"({"name":null,"description":""})"), "None");
  EXPECT_EQ(jemm_tool_text("not json\n at all"), "not json at all");
  EXPECT_EQ(jemm_tool_text(R"(["name"])"), "[\"name\"]");
  const api::Question tools = single_question(R"({"type":"choice","criteria":{
      "t":{"action":{"tool_name":"x"},"description":"{\"name\":\"t\",\"parameters\":{\"q\":{}}}"},
      "u":{"action":{"other":1},"description":"{\"name\":\"u\"}"}}})");
  EXPECT_EQ(jemm_candidate_texts(tools), (std::vector<std::string>{"t | params: q", "{\"name\":\"u\"}"}));
}

TEST(JemmPrompt, MatchesTransformersGoldens) {
  const auto chat_template = text::ChatTemplate::from_model_dir(fixture_dir());
  const auto tokenizer = text::Tokenizer::from_file(fixture_dir() / "tokenizer.json");
  const std::size_t checked = test::for_each_prompt_golden(
      fixture_dir(), [&](const api::Json& golden, const api::DecisionRequest& request, const api::Question& question) {
        const std::string prompt =
            chat_template.render(jemm_messages(request.state, question), true, text::Thinking::disabled);
        EXPECT_EQ(prompt, golden["text"].get<std::string>()) << question.key;
        EXPECT_EQ(encode_without_special_tokens(tokenizer, prompt), golden["ids"].get<std::vector<int32_t>>())
            << question.key;
      });
  EXPECT_EQ(checked, 10U);
}

TEST(JemmReadout, TemperatureSoftmaxAndMaxProbabilityConfidence) {
  // Expected values: numpy float64 softmax(s / 1.3480874159655591), as the reference computes it.
  const std::vector<double> logits{2.0, 1.0, 0.0};
  const auto choice = jemm_answer(api::QuestionType::choice, logits, LogitRounding::bf16);
  ASSERT_TRUE(choice);
  EXPECT_NEAR(choice.value().probabilities[0], 0.5871703378200916, 1e-12);
  EXPECT_NEAR(choice.value().probabilities[1], 0.2796456603448636, 1e-12);
  EXPECT_NEAR(choice.value().probabilities[2], 0.13318400183504456, 1e-12);
  EXPECT_EQ(choice.value().choice_index, 0U);
  EXPECT_EQ(choice.value().confidence, choice.value().probabilities[0]);

  const std::vector<double> levels{0.0, 1.0, 0.5};
  const auto score = jemm_answer(api::QuestionType::score, levels, LogitRounding::bf16);
  ASSERT_TRUE(score);
  EXPECT_NEAR(score.value().score, 1.098716013888618, 1e-12);
  EXPECT_NEAR(score.value().confidence, 0.4616004544667697, 1e-12);

  // Noul: yes (A) first, so noul = p(yes); the logit 1 + 2^-8 rounds to BF16 1.0 (ties to even).
  const std::vector<double> yes_no{1.00390625, 0.0};
  const auto noul = jemm_answer(api::QuestionType::noul, yes_no, LogitRounding::bf16);
  ASSERT_TRUE(noul);
  EXPECT_NEAR(noul.value().probabilities[0], 0.677387518300456, 1e-12);
  EXPECT_NEAR(jemm_answer(api::QuestionType::noul, yes_no, LogitRounding::none).value().probabilities[0],
              0.678020420873441, 1e-12);

  const std::vector<double> tie{0.5, 0.5 + 1e-9};
  EXPECT_EQ(jemm_answer(api::QuestionType::choice, tie, LogitRounding::bf16).value().choice_index, 0U);
  const std::vector<double> broken{NAN, 0.0};
  EXPECT_EQ(jemm_answer(api::QuestionType::choice, broken, LogitRounding::bf16).error().code,
            api::ErrorCode::internal_error);
}

TEST(JemmEngine, AnswersLikeTheTransformersReference) {
  LoadedModel model = load_model(fixture_dir().string());
  EXPECT_EQ(model.name, "tiny-jemm");
  const runtime::ModelInfo info = model.engine->info();
  EXPECT_EQ(info.question_types.size(), 3U);
  EXPECT_EQ(info.max_choice_options, 32U);
  EXPECT_EQ(info.context_tokens, 8192);
  EXPECT_EQ(info.confidence_method, "max_probability");
  ASSERT_EQ(read_jsonl(fixture_dir() / "expected.jsonl").size(), 5U);
  EXPECT_GT(test::expect_reference_answers(*model.engine, fixture_dir() / "expected.jsonl", 1e-5), 0U);
}

TEST(JemmEngine, LimitsAreRefusedNeverTruncated) {
  LoadedModel model = load_model(fixture_dir().string());
  const auto prepared = [&](const api::Json& body) {
    auto plan = model.engine->prepare(typed_request(body), {});
    return plan ? std::optional<api::ErrorCode>() : std::optional<api::ErrorCode>(plan.error().code);
  };
  api::Json wide =
      api::Json::parse(R"({"state":"s","questions":{"a":{"type":"noul"},"b":{"type":"choice","criteria":{}}}})");
  for (int i = 0; i < 33; ++i) wide["questions"]["b"]["criteria"]["o" + std::to_string(i)] = nullptr;
  EXPECT_EQ(prepared(wide), api::ErrorCode::too_many_options);
  wide["questions"]["b"]["criteria"].erase("o32");
  EXPECT_EQ(prepared(wide), std::nullopt);

  std::ifstream in(fixture_dir() / "limits.json");
  const api::Json limits = api::Json::parse(in);
  const auto body = [&](const char* state) {
    return api::Json{{"state", limits[state]}, {"questions", {{"q", limits["question"]}}}};
  };
  EXPECT_EQ(prepared(body("fits")), std::nullopt);
  EXPECT_EQ(prepared(body("too_long")), api::ErrorCode::max_tokens_exceeded);
}

// A copy of the fixture directory that tests may change.
class FixtureCopy {
 public:
  FixtureCopy()
      : dir_(std::filesystem::temp_directory_path() / ("s1-jemm-" + std::to_string(std::random_device()()))) {
    std::filesystem::copy(fixture_dir(), dir_);
  }
  ~FixtureCopy() { std::filesystem::remove_all(dir_); }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

std::string load_error(const std::filesystem::path& dir) {
  try {
    load_model(dir.string());
  } catch (const ModelLoadError& error) {
    return error.what();
  }
  return "";
}

struct ZeroTensor {
  std::string name;
  int64_t rows = 0, columns = 0;
};

// A safetensors file of F32 zero tensors.
void write_zero_safetensors(const std::filesystem::path& path, const std::vector<ZeroTensor>& tensors) {
  api::Json header = api::Json::object();
  std::size_t offset = 0;
  for (const ZeroTensor& tensor : tensors) {
    const auto bytes = static_cast<std::size_t>(tensor.rows * tensor.columns) * 4;
    header[tensor.name] = {
        {"dtype", "F32"}, {"shape", {tensor.rows, tensor.columns}}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  const std::string text = header.dump();
  const uint64_t length = text.size();
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(&length), sizeof length);
  out << text << std::string(offset, '\0');
}

TEST(JemmEngine, AppliesAnUnmergedAdapterLikeTheReference) {
  FixtureCopy copy;
  const std::filesystem::path adapter = fixture_dir().parent_path() / "tiny-jemm-lora";
  for (const char* name : {"adapter_config.json", "adapter_model.safetensors"}) {
    std::filesystem::copy_file(adapter / name, copy.dir() / name);
  }
  LoadedModel model = load_model(copy.dir().string());
  const auto lines = read_jsonl(adapter / "expected.jsonl");
  ASSERT_EQ(lines.size(), 5U);
  for (const api::Json& line : lines) {
    const api::DecisionRequest request = typed_request(line["request"]);
    const std::vector<api::Answer> answers = test::run_engine(*model.engine, request).answers;
    // The reference adds scale·B·A to the fp32 weights, s1serve adds scale·B(A·x) to the outputs: equal
    // up to fp32 rounding order, which can move a logit lying on a BF16 rounding boundary by one BF16
    // step (|Δp| ≈ 1e-5 on this fixture).
    test::expect_answers_match(request, answers, line["answers"], 1e-4);
  }
}

TEST(JemmEngine, RefusesAdaptersItCannotApply) {
  FixtureCopy copy;
  std::ofstream(copy.dir() / "adapter_config.json") << R"({"peft_type":"LORA","r":2,"lora_alpha":4})";
  std::string error = load_error(copy.dir());
  EXPECT_NE(error.find("adapter_model.safetensors"), std::string::npos) << error;

  std::ofstream(copy.dir() / "adapter_config.json") << R"({"peft_type":"LORA","r":2,"lora_alpha":4,"use_dora":true})";
  error = load_error(copy.dir());
  EXPECT_NE(error.find("use_dora"), std::string::npos) << error;

  // A pair for a weight the text decoder never runs must not be dropped.
  std::ofstream(copy.dir() / "adapter_config.json") << R"({"peft_type":"LORA","r":2,"lora_alpha":4})";
  write_zero_safetensors(copy.dir() / "adapter_model.safetensors",
                         {{"base_model.model.model.visual.blocks.0.attn.qkv.lora_A.weight", 2, 32},
                          {"base_model.model.model.visual.blocks.0.attn.qkv.lora_B.weight", 96, 2}});
  error = load_error(copy.dir());
  EXPECT_NE(error.find("model.visual.blocks.0.attn.qkv.weight"), std::string::npos) << error;

  // A pair whose shape does not fit its weight.
  write_zero_safetensors(copy.dir() / "adapter_model.safetensors",
                         {{"base_model.model.model.layers.0.mlp.up_proj.lora_A.weight", 2, 31},
                          {"base_model.model.model.layers.0.mlp.up_proj.lora_B.weight", 48, 2}});
  error = load_error(copy.dir());
  EXPECT_NE(error.find("up_proj"), std::string::npos) << error;
}

TEST(JemmEngine, ChecksTheExportManifestAgainstItsOwnRendering) {
  // The fixture's manifest comes from Transformers' apply_chat_template: every load checks it.
  std::ifstream in(fixture_dir() / "jemm_export.json");
  const api::Json manifest = api::Json::parse(in);
  for (const char* key : {"chat_prefix", "chat_suffix", "label_token_ids", "temperature"}) {
    FixtureCopy copy;
    api::Json tampered = manifest;
    if (tampered[key].is_string()) {
      tampered[key] = tampered[key].get<std::string>() + "\n";
    } else if (tampered[key].is_array()) {
      std::swap(tampered[key][0], tampered[key][1]);
    } else {
      tampered[key] = 1.0;
    }
    std::ofstream(copy.dir() / "jemm_export.json") << tampered.dump();
    const std::string error = load_error(copy.dir());
    EXPECT_NE(error.find(std::string("'") + key + "'"), std::string::npos) << key << ": " << error;
  }
  FixtureCopy copy;
  api::Json unmerged = manifest;
  unmerged["lora_mode"] = "unmerged_fp32";
  std::ofstream(copy.dir() / "jemm_export.json") << unmerged.dump();
  EXPECT_NE(load_error(copy.dir()).find("lora_mode"), std::string::npos);
}

TEST(JemmEngine, ReadsTheLabelRowsFromTheSideFile) {
  FixtureCopy copy;
  // A side file of 31 rows: a load error naming the file.
  const std::string header = R"({"weight":{"dtype":"F32","shape":[31,32],"data_offsets":[0,3968]}})";
  std::ofstream out(copy.dir() / jemm_label_head_file, std::ios::binary);
  const uint64_t length = header.size();
  out.write(reinterpret_cast<const char*>(&length), sizeof length);
  out << header << std::string(31 * 32 * 4, '\0');
  out.close();
  const std::string error = load_error(copy.dir());
  EXPECT_NE(error.find(std::string(jemm_label_head_file)), std::string::npos) << error;
  EXPECT_NE(error.find("31 rows"), std::string::npos) << error;

  // Zero rows instead: every label logit is 0, so the answers are uniform whatever the LM head says.
  const std::string zeros = R"({"weight":{"dtype":"F32","shape":[32,32],"data_offsets":[0,4096]}})";
  std::ofstream again(copy.dir() / jemm_label_head_file, std::ios::binary);
  const uint64_t zeros_length = zeros.size();
  again.write(reinterpret_cast<const char*>(&zeros_length), sizeof zeros_length);
  again << zeros << std::string(32 * 32 * 4, '\0');
  again.close();
  LoadedModel model = load_model(copy.dir().string());
  const api::DecisionRequest request = typed_request(api::Json::parse(
      R"({"state":"s","questions":{"q":{"type":"choice","criteria":{"a":null,"b":null,"c":null}}}})"));
  const std::vector<api::Answer> answers = test::run_engine(*model.engine, request).answers;
  for (const double p : answers[0].probabilities) EXPECT_NEAR(p, 1.0 / 3.0, 1e-12);
}

}  // namespace
}  // namespace s1::decide
