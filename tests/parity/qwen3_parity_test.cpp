// The dense Qwen3 family against Transformers' Qwen3ForCausalLM on tiny random checkpoints
// (tools/reference/make_qwen3_fixtures.py), and prefix sharing against unshared forwards.
//
// Tolerances, declared before comparing:
//  fp32 logits: max |Δ| ≤ 1e-4 · max |reference logit| (the logit scale);
//  fp32 hidden (final norm): |Δ| ≤ 1e-5 + 1e-4 · |reference| per element;
//  bf16 (weights and activations rounded to bf16 in every product, ~3e-3 relative per product,
//  compounded over up to 3 layers and a 130-token softmax): max |Δ| ≤ 5e-2 · max |reference| for both
//  logits and hidden rows;
//  prefix sharing (same arithmetic, only the matmul row count and so the reduction blocking can
//  differ): max |Δ| ≤ 1e-5 · max(1, max |unshared|).

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/cpu/linear.h"
#include "model/checkpoint/checkpoint.h"
#include "model/checkpoint/gguf.h"
#include "model/checkpoint/gguf_dequant.h"
#include "model/checkpoint/mapped_file.h"
#include "model/checkpoint/load_error.h"
#include "model/qwen3/config.h"
#include "model/qwen3/qwen3_model.h"

#include "decoder_parity_support.h"

namespace s1::qwen3 {
namespace {

using parity::full_hidden;
using Reference = parity::DecoderReference;

constexpr double logits_tolerance = 1e-4;
constexpr double bf16_tolerance = 5e-2;

const std::vector<std::string> cases{"gqa1_tied", "gqa2_untied", "gqa4_untied", "gqa2_tied_wide"};

std::filesystem::path fixture_root() { return parity::decoder_fixture_root("qwen3"); }

Reference read_reference(const std::string& name, std::size_t n) {
  return parity::read_decoder_reference(fixture_root() / name, n);
}

class Qwen3Parity : public ::testing::TestWithParam<std::string> {};

TEST_P(Qwen3Parity, Fp32MatchesTransformers) {
  const auto model = load_qwen3(fixture_root() / GetParam(), backend::cpu::Precision::fp32);
  ASSERT_EQ(model->info().family, "qwen3");
  parity::expect_fp32_matches_references(*model, fixture_root() / GetParam(), logits_tolerance);
}

TEST_P(Qwen3Parity, Bf16WithinDocumentedBound) {
  if (!backend::cpu::linear_supported(backend::cpu::Precision::bf16))
    GTEST_SKIP() << "this CPU cannot run bf16 matmuls";
  const auto model = load_qwen3(fixture_root() / GetParam(), backend::cpu::Precision::bf16);
  parity::expect_within_scaled_bound_at_every_length(*model, fixture_root() / GetParam(), bf16_tolerance);
}

TEST_P(Qwen3Parity, SharedPrefixBranchesEqualUnsharedForwards) {
  const auto model = load_qwen3(fixture_root() / GetParam(), backend::cpu::Precision::fp32);
  parity::expect_reference_branches_equal_full_prompts(*model, fixture_root() / GetParam());
}

TEST(Qwen3States, TokenByTokenExtensionEqualsOneForward) {
  // Thirty one-token steps: states chain their segments and merge them past a threshold; every
  // step's row must still be the unshared forward's row.
  const auto model = load_qwen3(fixture_root() / "gqa2_untied", backend::cpu::Precision::fp32);
  parity::expect_token_by_token_rows_match(*model, read_reference("gqa2_untied", 64), 10, 40);
}

INSTANTIATE_TEST_SUITE_P(Cases, Qwen3Parity, ::testing::ValuesIn(cases));

TEST(Qwen3Forward, RejectsBadCalls) {
  const auto model = load_qwen3(fixture_root() / "gqa1_tied", backend::cpu::Precision::fp32);
  // A state from a different qwen3 model (other layer count or width) is refused, not misread.
  const auto other = load_qwen3(fixture_root() / "gqa4_untied", backend::cpu::Precision::fp32);
  parity::expect_bad_calls_rejected(*model, *other);
}

// Writes `tensors` (renamed by `rename`; an empty new name drops the tensor) as a safetensors file.
void write_renamed_checkpoint(const checkpoint::Checkpoint& source, const std::filesystem::path& file,
                              const std::function<std::string(const std::string&)>& rename) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  std::string data;
  for (const checkpoint::TensorView& tensor : source.tensors()) {
    const std::string name = rename(tensor.name);
    if (name.empty()) continue;
    header[name] = {{"dtype", std::string(checkpoint::dtype_name(tensor.dtype))},
                    {"shape", tensor.shape},
                    {"data_offsets", {data.size(), data.size() + tensor.bytes.size()}}};
    data.append(reinterpret_cast<const char*>(tensor.bytes.data()), tensor.bytes.size());
  }
  const std::string text = header.dump();
  const uint64_t length = text.size();
  std::ofstream out(file, std::ios::binary);
  out.write(reinterpret_cast<const char*>(&length), sizeof length);  // little-endian on x86
  out << text << data;
}

// tests/fixtures/gguf/tiny-qwen3.gguf is tests/fixtures/tiny-qwen3-chat under llama.cpp's names and
// keys (tools/reference/make_gguf_fixtures.py): the same BF16 weights, so loading it through the
// GGUF path must give exactly the logits of the safetensors directory.
TEST(Qwen3Gguf, LoadsTheSameModelAsItsSafetensorsDirectory) {
  const std::filesystem::path fixtures = fixture_root().parent_path().parent_path() / "fixtures";
  for (const auto precision : {backend::cpu::Precision::fp32, backend::cpu::Precision::bf16}) {
    if (!backend::cpu::linear_supported(precision)) continue;
    const auto from_gguf = load_qwen3(fixtures / "gguf" / "tiny-qwen3.gguf", precision);
    const auto from_directory = load_qwen3(fixtures / "tiny-qwen3-chat", precision);
    EXPECT_EQ(from_gguf->info().vocab_size, from_directory->info().vocab_size);
    const std::vector<int32_t> ids{3030, 12, 500, 7, 2999, 41, 3031, 8, 3033};
    const std::vector<float> hidden = full_hidden(*from_gguf, ids);
    EXPECT_EQ(hidden, full_hidden(*from_directory, ids));
    const auto last = std::span<const float>(hidden).last(from_gguf->info().hidden_size);
    EXPECT_EQ(from_gguf->lm_head().all_logits(last), from_directory->lm_head().all_logits(last));
  }
}

// tests/fixtures/gguf/converted/tiny-qwen3-f32.gguf is tests/fixtures/tiny-qwen3-chat converted by
// llama.cpp's own convert_hf_to_gguf.py --outtype f32 (tools/reference/make_gguf_converter_fixtures.py):
// its BF16 weights widen exactly, so fp32 logits equal the safetensors directory's.
TEST(Qwen3Gguf, LlamaCppsConversionGivesTheLogitsOfItsSafetensorsDirectory) {
  const std::filesystem::path fixtures = fixture_root().parent_path().parent_path() / "fixtures";
  const auto converted =
      load_qwen3(fixtures / "gguf" / "converted" / "tiny-qwen3-f32.gguf", backend::cpu::Precision::fp32);
  const auto from_directory = load_qwen3(fixtures / "tiny-qwen3-chat", backend::cpu::Precision::fp32);
  EXPECT_EQ(converted->info().vocab_size, from_directory->info().vocab_size);
  const std::vector<int32_t> ids{3030, 12, 500, 7, 2999, 41, 3031, 8, 3033};
  const std::vector<float> hidden = full_hidden(*converted, ids);
  EXPECT_EQ(hidden, full_hidden(*from_directory, ids));
  const auto last = std::span<const float>(hidden).last(converted->info().hidden_size);
  EXPECT_EQ(converted->lm_head().all_logits(last), from_directory->lm_head().all_logits(last));
}

// tiny-qwen3-q8_0.gguf: the same model with every matrix quantised to Q8_0 by the gguf package,
// dequantised to fp32 at load. Q8_0 keeps each weight within half a step (max |w| of its block of
// 32 / 127) of its value; through this random two-layer model that moves the last logits by 3.2 %
// of the logit scale (measured 2026-12), so the bound is 10 %. A block decoded into the wrong place
// or order moves them by the order of the scale.
constexpr double q8_0_tolerance = 0.1;
TEST(Qwen3Gguf, Q8_0WeightsStayWithinTheirBoundOfTheModel) {
  const std::filesystem::path fixtures = fixture_root().parent_path().parent_path() / "fixtures";
  const auto quantised = load_qwen3(fixtures / "gguf" / "tiny-qwen3-q8_0.gguf", backend::cpu::Precision::fp32);
  const auto exact = load_qwen3(fixtures / "tiny-qwen3-chat", backend::cpu::Precision::fp32);
  const std::vector<int32_t> ids{3030, 12, 500, 7, 2999, 41, 3031, 8, 3033};
  const std::size_t width = exact->info().hidden_size;
  const std::vector<float> expected_hidden = full_hidden(*exact, ids);
  const std::vector<float> hidden = full_hidden(*quantised, ids);
  const auto expected = exact->lm_head().all_logits(std::span<const float>(expected_hidden).last(width));
  const auto logits = quantised->lm_head().all_logits(std::span<const float>(hidden).last(width));
  const double drift = parity::max_difference(logits, expected) / parity::max_abs(expected);
  EXPECT_LE(drift, q8_0_tolerance) << "max |Δ logit| / logit scale";
  EXPECT_GT(drift, 0.0) << "the Q8_0 file should not hold the exact weights";
  RecordProperty("q8_0_logit_drift", std::to_string(drift));
}

// llama.cpp's own evaluation (llama-cpp-python 0.3.36, logits_all, plain ggml CPU kernels) of the
// tiny GGUFs, every position of one sequence (tests/fixtures/gguf/llama_cpp/tiny-qwen3-logits.gguf,
// tools/reference/make_llama_cpp_logits.py). Bounds on max |Δ logit| / llama.cpp's logit scale,
// declared from what differs (measured 2026-12-02 on an AMX Xeon, recorded as properties):
//  f32: llama.cpp's converter's file; the same fp32 weights (F32 KV cache), different summation
//   orders: 1e-4 (measured 5.8e-7).
//  q8_0: the same Q8_0 blocks; both quantise activations to int8 per 32 values, llama.cpp with an
//   fp16 block scale (its Q8_0), ours with an fp32 one, so some roundings differ by a step; with
//   rows of only 64 values that is visible: 3e-2 (measured 1.5e-2; each is 3.1e-2 from fp32).
//  q4_k: the tiny rows fall back to Q5_0 (s1serve quantize, as llama.cpp's quantizer); we dequantise
//   Q5_0 to fp32 at load, llama.cpp multiplies Q5_0 by int8-quantised activations: 4e-2 (measured
//   2.0e-2; each is ~0.2 from fp32).
// A wrong block decode or a wrong tensor moves the logits by the order of the scale.
TEST(Qwen3Gguf, LogitsMatchLlamaCppsOwnEvaluation) {
  const std::filesystem::path gguf = fixture_root().parent_path().parent_path() / "fixtures" / "gguf";
  const auto mapped = checkpoint::MappedFile::open(gguf / "llama_cpp" / "tiny-qwen3-logits.gguf");
  const checkpoint::GgufFile reference = checkpoint::parse_gguf(mapped.bytes(), "tiny-qwen3-logits.gguf");
  const std::vector<int64_t> stored_ids = reference.require(reference.get_ints("s1test.ids"), "s1test.ids");
  const std::vector<int32_t> ids(stored_ids.begin(), stored_ids.end());
  const struct {
    const char* tensor;
    std::filesystem::path file;
    double tolerance;
  } files[] = {{"f32", gguf / "converted" / "tiny-qwen3-f32.gguf", 1e-4},
               {"q8_0", gguf / "tiny-qwen3-q8_0.gguf", 3e-2},
               {"q4_k", gguf / "tiny-qwen3-q4_k.gguf", 4e-2}};
  const checkpoint::GgufTensor* fp32_tensor = reference.find_tensor("f32");
  ASSERT_NE(fp32_tensor, nullptr);
  const std::vector<float> fp32 = checkpoint::dequantize(*fp32_tensor);
  for (const auto& each : files) {
    SCOPED_TRACE(each.tensor);
    const checkpoint::GgufTensor* tensor = reference.find_tensor(each.tensor);
    ASSERT_NE(tensor, nullptr);
    const std::vector<float> expected = checkpoint::dequantize(*tensor);
    const auto model = load_qwen3(each.file, backend::cpu::Precision::fp32);
    const std::vector<float> logits = model->lm_head().all_logits(full_hidden(*model, ids));
    ASSERT_EQ(logits.size(), expected.size());
    const double drift = parity::max_difference(logits, expected) / parity::max_abs(expected);
    EXPECT_LE(drift, each.tolerance) << "max |Δ logit| / llama.cpp's logit scale";
    RecordProperty(std::string(each.tensor) + "_llama_cpp_drift", std::to_string(drift));
    // For docs/benchmarks/quantized.md's drift table: both engines' drift from llama.cpp's fp32.
    std::printf("%s: max |Δ logit| / scale against llama.cpp = %.3g; ours from fp32 %.3g, llama.cpp's %.3g\n",
                each.tensor, drift, parity::max_difference(logits, fp32) / parity::max_abs(fp32),
                parity::max_difference(expected, fp32) / parity::max_abs(fp32));
  }
  if (backend::cpu::linear_supported(backend::cpu::Precision::bf16)) {
    // The bf16 row of the table (llama.cpp's CPU multiply cannot read tiny-qwen3.gguf's BF16 norms).
    const auto bf16 = load_qwen3(gguf / "tiny-qwen3.gguf", backend::cpu::Precision::bf16);
    const std::vector<float> logits = bf16->lm_head().all_logits(full_hidden(*bf16, ids));
    const double drift = parity::max_difference(logits, fp32) / parity::max_abs(fp32);
    EXPECT_LE(drift, bf16_tolerance);
    std::printf("bf16: ours from fp32 %.3g\n", drift);
  }
}

class Qwen3Checkpoints : public parity::ScratchDirectoryTest {};

TEST_F(Qwen3Checkpoints, BareModelNamesLoadTheSameWeights) {
  // A Qwen3Model saved on its own has no "model." prefix (and, tied, no lm_head.weight).
  const std::filesystem::path fixture = fixture_root() / "gqa1_tied";
  std::filesystem::copy_file(fixture / "config.json", dir_ / "config.json");
  const auto source = checkpoint::Checkpoint::open(fixture);
  write_renamed_checkpoint(source, dir_ / "model.safetensors", [](const std::string& name) {
    return name.starts_with("model.") ? name.substr(6) : std::string();
  });
  const auto bare = load_qwen3(dir_, backend::cpu::Precision::fp32);
  const auto original = load_qwen3(fixture, backend::cpu::Precision::fp32);
  const Reference reference = read_reference("gqa1_tied", 7);
  EXPECT_EQ(full_hidden(*bare, reference.ids), full_hidden(*original, reference.ids));
}

TEST_F(Qwen3Checkpoints, UntiedWithoutLmHeadIsALoadError) {
  const std::filesystem::path fixture = fixture_root() / "gqa2_untied";
  std::filesystem::copy_file(fixture / "config.json", dir_ / "config.json");
  const auto source = checkpoint::Checkpoint::open(fixture);
  write_renamed_checkpoint(source, dir_ / "model.safetensors",
                           [](const std::string& name) { return name == "lm_head.weight" ? std::string() : name; });
  try {
    (void)load_qwen3(dir_, backend::cpu::Precision::fp32);
    ADD_FAILURE() << "loaded an untied checkpoint without lm_head.weight";
  } catch (const checkpoint::LoadError& error) {
    EXPECT_NE(std::string(error.what()).find("lm_head.weight"), std::string::npos) << error.what();
  }
}

TEST_F(Qwen3Checkpoints, AWrongShapeIsALoadError) {
  // gqa2_tied_wide's weights under gqa2_untied's config: every shape disagrees.
  std::filesystem::copy_file(fixture_root() / "gqa2_untied" / "config.json", dir_ / "config.json");
  std::filesystem::copy_file(fixture_root() / "gqa2_tied_wide" / "model.safetensors", dir_ / "model.safetensors");
  EXPECT_THROW((void)load_qwen3(dir_, backend::cpu::Precision::fp32), checkpoint::LoadError);
}

class Qwen3ConfigReading : public parity::ScratchDirectoryTest {
 protected:
  void SetUp() override {
    ScratchDirectoryTest::SetUp();
    std::ifstream in(fixture_root() / "gqa2_untied" / "config.json");
    original_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  // The fixture's config.json with `from` replaced by `to`, parsed.
  void expect_rejected(const std::string& from, const std::string& to, const std::string& key) {
    std::string text = original_;
    const std::size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    std::ofstream(dir_ / "config.json") << text;
    try {
      (void)read_qwen3_config(dir_ / "config.json");
      ADD_FAILURE() << "accepted " << to;
    } catch (const checkpoint::LoadError& error) {
      EXPECT_NE(std::string(error.what()).find(key), std::string::npos) << error.what();
    }
  }

  std::string original_;
};

TEST_F(Qwen3ConfigReading, ReadsTheFixture) {
  const auto config = read_qwen3_config(fixture_root() / "gqa2_untied" / "config.json");
  EXPECT_EQ(config.head_dim, 10);
  EXPECT_EQ(config.num_key_value_heads, 2);
  EXPECT_EQ(config.rope_theta, 1000000.0);
  EXPECT_FALSE(config.tie_word_embeddings);
}

TEST_F(Qwen3ConfigReading, RejectsWhatItDoesNotImplement) {
  expect_rejected("\"rope_type\": \"default\"", "\"rope_type\": \"linear\", \"factor\": 2.0", "rope_type");
  expect_rejected("\"use_sliding_window\": false", "\"use_sliding_window\": true", "use_sliding_window");
  expect_rejected("\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\"", "hidden_act");
  expect_rejected("\"attention_bias\": false", "\"attention_bias\": true", "attention_bias");
  expect_rejected("\"model_type\": \"qwen3\"", "\"model_type\": \"qwen2\"", "model_type");
  expect_rejected("\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3", "num_key_value_heads");
  expect_rejected("\"vocab_size\": 307", "\"vocab_size\": 307, \"mystery_setting\": 1", "mystery_setting");
  expect_rejected("\"rope_parameters\": {\n    \"rope_theta\": 1000000.0,\n    \"rope_type\": \"default\"\n  }",
                  "\"rope_scaling\": null", "rope_theta");
}

TEST_F(Qwen3ConfigReading, AcceptsTheLegacyRopeSpelling) {
  // Published Qwen3 checkpoints: top-level rope_theta and "rope_scaling": null.
  std::string text = original_;
  const std::string from =
      "\"rope_parameters\": {\n    \"rope_theta\": 1000000.0,\n    \"rope_type\": \"default\"\n  }";
  const std::size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, from.size(), "\"rope_theta\": 1000000.0, \"rope_scaling\": null");
  std::ofstream(dir_ / "config.json") << text;
  EXPECT_EQ(read_qwen3_config(dir_ / "config.json").rope_theta, 1000000.0);
}

}  // namespace
}  // namespace s1::qwen3
