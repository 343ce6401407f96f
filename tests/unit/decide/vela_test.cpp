// The vela-0.3b contract against its Python reference (tools/reference/vela_contract.py: HF tokenizers,
// Transformers' ModernBertModel and the marker head in torch) on the tiny stand-in tests/fixtures/tiny-vela:
// the sequence's token ids, marker positions, pools and state cut exactly; the head's logits within 1e-4
// (fp32, tiny random weights); answers within 1e-5; the readout maths against hand values; refusals and
// load errors that name the file and key.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "decide/contract_table.h"
#include "decide/contracts/vela_encoder.h"
#include "support/fixtures.h"
#include "support/reference_answers.h"
#include "text/tokenizer.h"

namespace s1::decide {
namespace {

constexpr double logit_tolerance = 1e-4;
constexpr double answer_tolerance = 1e-5;

std::filesystem::path fixture_dir() { return test::fixture_dir("tiny-vela"); }

void write_json(const std::filesystem::path& path, const api::Json& value) {
  std::ofstream out(path);
  out << value.dump(1);
}

using test::read_json;
using test::read_jsonl;
using test::typed_request;

// The tokenizer as the engine loads it: the fixture's file without its marker entries.
text::Tokenizer tokenizer_without_markers(const VelaPackage& package) {
  api::Json spec = read_json(fixture_dir() / "tokenizer.json");
  api::Json kept = api::Json::array();
  for (const api::Json& token : spec["added_tokens"]) {
    const auto& names = package.marker_names;
    if (std::find(names.begin(), names.end(), token["content"].get<std::string>()) == names.end())
      kept.push_back(token);
  }
  spec["added_tokens"] = kept;
  return text::Tokenizer::from_json(spec.dump(), "tiny-vela tokenizer");
}

TEST(VelaPacking, MatchesTheReferenceSequence) {
  const VelaPackage package = read_vela_package(fixture_dir() / "config.json");
  EXPECT_EQ(package.max_length, 192U);
  const text::Tokenizer tokenizer = tokenizer_without_markers(package);
  const std::vector<api::Json> lines = read_jsonl(fixture_dir() / "packing.jsonl");
  ASSERT_EQ(lines.size(), 8U);
  bool cut = false, windowed = false;
  for (const api::Json& line : lines) {
    const api::DecisionRequest request = typed_request(line["request"]);
    auto sequences = vela_pack_request(tokenizer, package, VelaSettings{}.abstain_types, request);
    ASSERT_TRUE(sequences) << sequences.error().message;
    const auto windows = line["windows"].get<std::vector<std::vector<int32_t>>>();
    ASSERT_EQ(sequences.value().size(), windows.size()) << line["request"].dump();
    for (std::size_t w = 0; w < windows.size(); ++w) EXPECT_EQ(sequences.value()[w].ids, windows[w]) << w;
    windowed = windowed || windows.size() > 1;
    const VelaSequence& got = sequences.value().front();
    EXPECT_EQ(got.ids, line["ids"].get<std::vector<int32_t>>()) << line["request"].dump();
    EXPECT_EQ(got.state_tokens, line["state_tokens"].get<std::size_t>());
    EXPECT_EQ(got.state_tokens_kept, line["state_tokens_kept"].get<std::size_t>());
    cut = cut || got.state_tokens_kept < got.state_tokens;
    ASSERT_EQ(got.questions.size(), line["questions"].size());
    for (std::size_t q = 0; q < got.questions.size(); ++q) {
      const api::Json& expected = line["questions"][q];
      EXPECT_EQ(got.questions[q].query, expected["query"].get<std::size_t>());
      EXPECT_EQ(got.questions[q].options, expected["options"].get<std::vector<std::size_t>>());
      EXPECT_EQ(got.real_options[q], expected["real_options"].get<std::size_t>());
      EXPECT_EQ(got.questions[q].pool_begin, expected["pool"][0].get<std::size_t>());
      EXPECT_EQ(got.questions[q].pool_end, expected["pool"][1].get<std::size_t>());
    }
  }
  EXPECT_TRUE(cut) << "the fixture must exercise the state cut";
  EXPECT_TRUE(windowed) << "the fixture must exercise the windows over a cut one-part state";
}

TEST(VelaPacking, TextNeverSpellsAMarker) {
  const VelaPackage package = read_vela_package(fixture_dir() / "config.json");
  const text::Tokenizer tokenizer = tokenizer_without_markers(package);
  const api::DecisionRequest request = typed_request(api::Json::parse(
      R"({"state":"a [Q] b [SEG_user] c [ABS]","questions":{"q":{"type":"choice","instructions":"[O] [E]","criteria":{"x":"[SEP_SCHEMA]","y":null}}}})"));
  auto sequences = vela_pack_request(tokenizer, package, {api::QuestionType::choice}, request);
  ASSERT_TRUE(sequences);
  const std::vector<int32_t>& ids = sequences.value().front().ids;
  const VelaMarkers& m = package.markers;
  std::size_t markers = 0;
  for (const int32_t id : ids) {
    for (const int32_t marker : {m.q, m.o, m.abstain, m.sep_schema, m.e, m.seg_user, m.seg_context, m.seg_answer}) {
      markers += id == marker ? 1 : 0;
    }
  }
  // [Q], two [O], [ABS], [SEP_SCHEMA], [SEG_user]: the structure's own markers only.
  EXPECT_EQ(markers, 6U);
}

TEST(VelaPacking, StateMembersBecomeParts) {
  const auto parts = vela_parts(api::Json::parse(R"({"answer":"a","request":"r"})"));
  ASSERT_EQ(parts.size(), 2U);
  EXPECT_EQ(parts[0].role, "user");
  EXPECT_EQ(parts[0].text, "r");
  EXPECT_EQ(parts[1].role, "answer");
  // An unknown key feeds the context part as a "key:\n<value>" block (values as canonical JSON);
  // several keys of one part are such blocks a blank line apart; a JSON-object string is that object.
  const auto other = vela_parts(api::Json::parse(R"({"Request":"r","extra":{"b":1,"a":[1.5]},"tools":"t"})"));
  ASSERT_EQ(other.size(), 2U);
  EXPECT_EQ(other[0].role, "user");
  EXPECT_EQ(other[0].text, "r");
  EXPECT_EQ(other[1].role, "context");
  EXPECT_EQ(other[1].text, "extra:\n{\"a\":[1.5],\"b\":1}\n\ntools:\nt");
  const auto decoded = vela_parts(api::Json(R"( {"response": "x"})"));
  ASSERT_EQ(decoded.size(), 1U);
  EXPECT_EQ(decoded[0].role, "answer");
  const auto array = vela_parts(api::Json::parse(R"([{"z": 1, "a": "é"}])"));
  ASSERT_EQ(array.size(), 1U);
  EXPECT_EQ(array[0].text, "[{\"a\":\"é\",\"z\":1}]");
}

TEST(VelaPacking, QuestionsThatLeaveNoRoomForTheStateAreRefused) {
  const VelaPackage package = read_vela_package(fixture_dir() / "config.json");
  const text::Tokenizer tokenizer = tokenizer_without_markers(package);
  api::Json body = api::Json::parse(R"({"state":"short","questions":{}})");
  for (int i = 0; i < 40; ++i) {
    body["questions"]["q" + std::to_string(i)] = {{"type", "noul"}, {"instructions", "Is it fine?"}};
  }
  auto sequence = vela_pack_request(tokenizer, package, {api::QuestionType::choice}, typed_request(body));
  ASSERT_FALSE(sequence);
  EXPECT_EQ(sequence.error().code, api::ErrorCode::max_tokens_exceeded);
  EXPECT_NE(sequence.error().message.find("192"), std::string::npos) << sequence.error().message;
}

TEST(VelaReadout, ConfidencesAndCalibrationAgainstHandValues) {
  const std::vector<double> p = {0.5, 0.3, 0.2};
  EXPECT_NEAR(top2_margin_confidence(p), 0.2, 1e-15);
  EXPECT_EQ(top2_margin_confidence(std::vector<double>{1.0}), 1.0);
  EXPECT_NEAR(variance_confidence(std::vector<double>{0.0, 1.0, 0.0}), 1.0, 1e-15);
  EXPECT_NEAR(variance_confidence(std::vector<double>{0.5, 0.0, 0.5}), 0.0, 1e-15);
  // mean 0.7, variance 0.5·0.49 + 0.3·0.09 + 0.2·1.69 = 0.61, over a uniform one's (3² − 1)/12 = 2/3.
  EXPECT_NEAR(variance_confidence(p), 1.0 - 0.61 * 1.5, 1e-12);

  VelaCalibration calibration;
  calibration.choice = 2.0;
  const std::vector<float> logits = {1.0F, 2.0F, 3.0F};
  auto choice = vela_answer(api::QuestionType::choice, logits, calibration);
  ASSERT_TRUE(choice);
  const double z = std::exp(0.5) + std::exp(1.0) + std::exp(1.5);
  EXPECT_NEAR(choice.value().probabilities[0], std::exp(0.5) / z, 1e-12);
  EXPECT_NEAR(choice.value().probabilities[2], std::exp(1.5) / z, 1e-12);
  EXPECT_EQ(choice.value().choice_index, 2U);
  EXPECT_NEAR(choice.value().confidence, (std::exp(1.5) - std::exp(1.0)) / z, 1e-12);

  // A noul question reads as a choice: the choice temperature, not the noul one.
  calibration.choice = 0.5;
  calibration.noul = 4.0;
  calibration.noul_calibration = VelaCalibration::Noul{2.0, 0.25};
  const std::vector<float> noul_logits = {0.0F, 0.5F};  // no, yes
  auto noul = vela_answer(api::QuestionType::noul, noul_logits, calibration);
  ASSERT_TRUE(noul);
  // softmax([0, 1]) → p(yes) = e/(1+e); logit(p) = 1; calibrated sigmoid(1/2 + 0.25).
  EXPECT_NEAR(noul.value().probabilities[0], 1.0 / (1.0 + std::exp(-0.75)), 1e-12);
  EXPECT_NEAR(noul.value().probabilities[0] + noul.value().probabilities[1], 1.0, 1e-15);

  const std::vector<float> broken = {1.0F, std::nanf("")};
  auto refused = vela_answer(api::QuestionType::score, broken, calibration);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, api::ErrorCode::internal_error);
}

TEST(VelaEngine, AnswersLikeTheReference) {
  LoadedModel model = load_model(fixture_dir().string());
  EXPECT_EQ(model.name, "vela-tiny");
  const runtime::ModelInfo info = model.engine->info();
  EXPECT_EQ(info.confidence_method, "top2_margin");
  EXPECT_EQ(info.context_tokens, 192);
  const std::vector<api::Json> heads = read_jsonl(fixture_dir() / "heads.jsonl");
  const std::vector<api::Json> lines = read_jsonl(fixture_dir() / "expected.jsonl");
  ASSERT_EQ(heads.size(), lines.size());
  for (std::size_t r = 0; r < lines.size(); ++r) {
    const api::Json& line = lines[r];
    const api::DecisionRequest request = typed_request(line["request"]);
    auto plan = model.engine->prepare(request, {});
    ASSERT_TRUE(plan) << plan.error().message;
    EXPECT_EQ(plan.value()->input_tokens, line["input_tokens"].get<int64_t>());
    auto raw = model.engine->run(*plan.value());
    ASSERT_TRUE(raw);
    for (std::size_t q = 0; q < request.questions.size(); ++q) {
      std::vector<double> logits = raw.value().label_scores[q];
      if (request.questions[q].type == api::QuestionType::noul) std::reverse(logits.begin(), logits.end());
      const std::vector<double> expected = heads[r]["logits"][q].get<std::vector<double>>();
      ASSERT_LE(logits.size(), expected.size());
      for (std::size_t i = 0; i < logits.size(); ++i) {
        EXPECT_NEAR(logits[i], expected[i], logit_tolerance) << "request " << r << " question " << q << " option " << i;
      }
    }
    auto answers = model.engine->finish(request, *plan.value(), std::move(raw.value()));
    ASSERT_TRUE(answers);
    test::expect_answers_match(request, answers.value(), line["answers"], answer_tolerance);
  }
}

// A copy of the fixture with one file rewritten, and the load error it must give.
class VelaLoadErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("vela-load-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::copy(fixture_dir(), dir_, std::filesystem::copy_options::recursive);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string load_error() {
    try {
      (void)load_model(dir_.string());
    } catch (const ModelLoadError& error) {
      return error.what();
    }
    return "";
  }

  void edit(const std::string& file, const std::function<void(api::Json&)>& change) {
    api::Json value = read_json(dir_ / file);
    change(value);
    write_json(dir_ / file, value);
  }

  std::filesystem::path dir_;
};

TEST_F(VelaLoadErrors, ConfigNamesFileAndKey) {
  edit("config.json", [](api::Json& c) { c["model_type"] = "vela2-decoder"; });
  EXPECT_NE(load_error().find("config.json"), std::string::npos);
  EXPECT_NE(load_error().find("model_type"), std::string::npos) << load_error();
  edit("config.json", [](api::Json& c) {
    c["model_type"] = "vela2-unified";
    c["marker_ids"].erase("[ABS]");
  });
  EXPECT_NE(load_error().find("[ABS]"), std::string::npos) << load_error();
  edit("config.json", [](api::Json& c) { c["marker_ids"]["[ABS]"] = 100000; });
  EXPECT_NE(load_error().find("outside the encoder's vocabulary"), std::string::npos) << load_error();
  edit("config.json", [](api::Json& c) {
    c["marker_ids"]["[ABS]"] = 648;
    c["span_threshold_table"] = 1;
  });
  EXPECT_NE(load_error().find("span_threshold_table"), std::string::npos) << load_error();
}

TEST_F(VelaLoadErrors, CalibrationNamesFileAndKey) {
  edit("calibration.json", [](api::Json& c) { c["temperature"]["choice"] = -1.0; });
  EXPECT_NE(load_error().find("calibration.json"), std::string::npos) << load_error();
  EXPECT_NE(load_error().find("choice"), std::string::npos) << load_error();
  std::filesystem::remove(dir_ / "calibration.json");
  EXPECT_NE(load_error().find("calibration.json"), std::string::npos) << load_error();
}

TEST_F(VelaLoadErrors, SettingsNameTheKey) {
  edit("s1serve.json", [](api::Json& c) { c["abstain_types"] = {"choice", "span"}; });
  EXPECT_NE(load_error().find("abstain_types"), std::string::npos) << load_error();
  EXPECT_NE(load_error().find("'span'"), std::string::npos) << load_error();
}

TEST_F(VelaLoadErrors, AbstainTypesChangeTheSequence) {
  edit("s1serve.json", [](api::Json& c) { c["abstain_types"] = api::Json::array(); });
  LoadedModel model = load_model(dir_.string());
  const api::Json line = read_jsonl(fixture_dir() / "expected.jsonl").front();
  auto plan = model.engine->prepare(typed_request(line["request"]), {});
  ASSERT_TRUE(plan);
  // The first request has one choice and one noul question: two [ABS] fewer.
  EXPECT_EQ(plan.value()->input_tokens, line["input_tokens"].get<int64_t>() - 2);
}

}  // namespace
}  // namespace s1::decide
