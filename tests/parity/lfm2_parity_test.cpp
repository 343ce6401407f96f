// The LFM2 family against Transformers' Lfm2ForCausalLM on tiny random checkpoints
// (tools/reference/make_lfm2_fixtures.py), prefix sharing against unshared forwards, and the strict
// config and weight checks.
//
// Tolerances, declared before comparing:
//  fp32 logits: max |Δ| ≤ 1e-4 · max |reference logit| (the logit scale);
//  fp32 hidden (final norm): |Δ| ≤ 1e-5 + 1e-4 · |reference| per element;
//  bf16 (weights and activations rounded to bf16 in every product, compounded over up to 6 layers
//  and a 130-token softmax): max |Δ| ≤ 5e-2 · max |reference| for both logits and hidden rows;
//  prefix sharing (same arithmetic, only the matmul row count and so the reduction blocking can
//  differ): max |Δ| ≤ 1e-5 · max(1, max |unshared|).

#include <gtest/gtest.h>

#include <algorithm>
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
#include "model/checkpoint/load_error.h"
#include "model/families.h"
#include "model/lfm2/config.h"
#include "model/lfm2/lfm2_model.h"

#include "decoder_parity_support.h"

namespace s1::lfm2 {
namespace {

using Reference = parity::DecoderReference;

constexpr double logits_tolerance = 1e-4;
constexpr double bf16_tolerance = 5e-2;

const std::vector<std::string> cases{"types_tied", "idxs_untied_bias"};

std::filesystem::path fixture_root() { return parity::decoder_fixture_root("lfm2"); }

Reference read_reference(const std::string& name, std::size_t n) {
  return parity::read_decoder_reference(fixture_root() / name, n);
}

class Lfm2Parity : public ::testing::TestWithParam<std::string> {};

TEST_P(Lfm2Parity, Fp32MatchesTransformers) {
  // Through the family table, as contracts load chat checkpoints.
  const auto model = model::load_causal_decoder(fixture_root() / GetParam(), backend::cpu::Precision::fp32);
  ASSERT_EQ(model->info().family, "lfm2");
  ASSERT_EQ(model::decoder_family_of(fixture_root() / GetParam()), "lfm2");
  parity::expect_fp32_matches_references(*model, fixture_root() / GetParam(), logits_tolerance);
}

TEST_P(Lfm2Parity, Bf16WithinDocumentedBound) {
  if (!backend::cpu::linear_supported(backend::cpu::Precision::bf16))
    GTEST_SKIP() << "this CPU cannot run bf16 matmuls";
  const auto model = load_lfm2(fixture_root() / GetParam(), backend::cpu::Precision::bf16);
  parity::expect_within_scaled_bound_at_every_length(*model, fixture_root() / GetParam(), bf16_tolerance);
}

TEST_P(Lfm2Parity, SharedPrefixBranchesEqualFullPrompts) {
  const auto model = load_lfm2(fixture_root() / GetParam(), backend::cpu::Precision::fp32);
  parity::expect_reference_branches_equal_full_prompts(*model, fixture_root() / GetParam());
}

TEST_P(Lfm2Parity, TokenByTokenExtensionEqualsOneForward) {
  const auto model = load_lfm2(fixture_root() / GetParam(), backend::cpu::Precision::fp32);
  parity::expect_token_by_token_rows_match(*model, read_reference(GetParam(), 64), 1, 20);
}

INSTANTIATE_TEST_SUITE_P(Cases, Lfm2Parity, ::testing::ValuesIn(cases));

// tests/fixtures/gguf/tiny-lfm2.gguf is tests/fixtures/tiny-lfm2 under LFM2Model's keys and names
// (tools/reference/make_gguf_fixtures.py): the same BF16 weights, so the GGUF path must give exactly
// the hidden rows and logits of the safetensors directory.
TEST(Lfm2Gguf, LoadsTheSameModelAsItsSafetensorsDirectory) {
  const std::filesystem::path fixtures = fixture_root().parent_path().parent_path() / "fixtures";
  const auto from_gguf = load_lfm2(fixtures / "gguf" / "tiny-lfm2.gguf", backend::cpu::Precision::fp32);
  const auto from_directory = load_lfm2(fixtures / "tiny-lfm2", backend::cpu::Precision::fp32);
  EXPECT_EQ(from_gguf->info().vocab_size, from_directory->info().vocab_size);
  const std::vector<int32_t> ids{3035, 12, 500, 7, 2999, 41, 3031, 8, 3033, 100, 200};
  const std::vector<float> hidden = parity::full_hidden(*from_gguf, ids);
  EXPECT_EQ(hidden, parity::full_hidden(*from_directory, ids));
  const auto last = std::span<const float>(hidden).last(from_gguf->info().hidden_size);
  EXPECT_EQ(from_gguf->lm_head().all_logits(last), from_directory->lm_head().all_logits(last));
}

// tests/fixtures/gguf/converted/tiny-lfm2-f32.gguf is tests/fixtures/tiny-lfm2 converted by llama.cpp's
// own convert_hf_to_gguf.py --outtype f32 (tools/reference/make_gguf_converter_fixtures.py): BF16
// weights widened exactly, so fp32 hidden rows and logits equal the safetensors directory's.
TEST(Lfm2Gguf, LlamaCppsConversionGivesTheLogitsOfItsSafetensorsDirectory) {
  const std::filesystem::path fixtures = fixture_root().parent_path().parent_path() / "fixtures";
  const auto converted =
      load_lfm2(fixtures / "gguf" / "converted" / "tiny-lfm2-f32.gguf", backend::cpu::Precision::fp32);
  const auto from_directory = load_lfm2(fixtures / "tiny-lfm2", backend::cpu::Precision::fp32);
  EXPECT_EQ(converted->info().vocab_size, from_directory->info().vocab_size);
  const std::vector<int32_t> ids{3035, 12, 500, 7, 2999, 41, 3031, 8, 3033, 100, 200};
  const std::vector<float> hidden = parity::full_hidden(*converted, ids);
  EXPECT_EQ(hidden, parity::full_hidden(*from_directory, ids));
  const auto last = std::span<const float>(hidden).last(converted->info().hidden_size);
  EXPECT_EQ(converted->lm_head().all_logits(last), from_directory->lm_head().all_logits(last));
}

TEST(Lfm2Forward, RejectsBadCalls) {
  const auto model = load_lfm2(fixture_root() / "types_tied", backend::cpu::Precision::fp32);
  const auto other = load_lfm2(fixture_root() / "idxs_untied_bias", backend::cpu::Precision::fp32);
  parity::expect_bad_calls_rejected(*model, *other);
}

class Lfm2Files : public parity::ScratchDirectoryTest {
 protected:
  static nlohmann::ordered_json fixture_config(const std::string& name) {
    std::ifstream in(fixture_root() / name / "config.json");
    return nlohmann::ordered_json::parse(in);
  }
  void write_config(const nlohmann::ordered_json& config) { std::ofstream(dir_ / "config.json") << config.dump(2); }

  // The config with `edit` applied must fail to load, naming `key`.
  void expect_rejected(const std::string& name, const std::function<void(nlohmann::ordered_json&)>& edit,
                       const std::string& key) {
    nlohmann::ordered_json config = fixture_config(name);
    edit(config);
    write_config(config);
    try {
      (void)read_lfm2_config(dir_ / "config.json");
      ADD_FAILURE() << "accepted " << config.dump();
    } catch (const checkpoint::LoadError& error) {
      EXPECT_NE(std::string(error.what()).find(key), std::string::npos) << error.what();
    }
  }
};

TEST_F(Lfm2Files, ReadsTheFixtures) {
  const Lfm2Config tied = read_lfm2_config(fixture_root() / "types_tied" / "config.json");
  EXPECT_EQ(tied.intermediate_size, 64);  // 96 adjusted: int(2·96/3) = 64, a multiple of 16
  EXPECT_EQ(tied.full_attention, (std::vector<bool>{false, false, true, false, true, false}));
  EXPECT_TRUE(tied.tie_word_embeddings);
  EXPECT_FALSE(tied.conv_bias);
  EXPECT_EQ(tied.head_dim, 8);
  const Lfm2Config untied = read_lfm2_config(fixture_root() / "idxs_untied_bias" / "config.json");
  EXPECT_EQ(untied.intermediate_size, 96);  // int(1.5 · int(2·96/3)) = 96
  EXPECT_EQ(untied.conv_kernel, 4);
  EXPECT_EQ(untied.rope_theta, 10000.0);
}

TEST_F(Lfm2Files, ReadsTheOriginalLfm2Spelling) {
  // LFM2's published configs: block_ff_dim, full_attn_idxs alone, top-level rope_theta, the
  // redundant block_*/conv_* widths.
  nlohmann::ordered_json config = fixture_config("types_tied");
  config.erase("intermediate_size");
  config.erase("layer_types");
  config.erase("rope_parameters");
  config.erase("tie_word_embeddings");
  config["block_ff_dim"] = 96;
  config["full_attn_idxs"] = {2, 4};
  config["rope_theta"] = 1000000.0;
  config["tie_embedding"] = true;
  config["block_dim"] = 32;
  config["conv_dim"] = 32;
  config["conv_dim_out"] = 32;
  config["num_heads"] = 4;
  config["block_norm_eps"] = 1e-5;
  config["block_use_swiglu"] = true;
  config["use_pos_enc"] = true;
  config["block_mlp_init_scale"] = 1.0;
  write_config(config);
  const Lfm2Config read = read_lfm2_config(dir_ / "config.json");
  const Lfm2Config original = read_lfm2_config(fixture_root() / "types_tied" / "config.json");
  EXPECT_EQ(read.intermediate_size, original.intermediate_size);
  EXPECT_EQ(read.full_attention, original.full_attention);
  EXPECT_EQ(read.rope_theta, original.rope_theta);
  EXPECT_TRUE(read.tie_word_embeddings);
}

TEST_F(Lfm2Files, RejectsWhatItDoesNotImplement) {
  using Json = nlohmann::ordered_json;
  expect_rejected("types_tied", [](Json& c) { c["layer_types"][1] = "sliding_attention"; }, "layer_types");
  expect_rejected("types_tied", [](Json& c) { c["layer_types"].erase(0); }, "layer_types");
  expect_rejected("idxs_untied_bias", [](Json& c) { c["full_attn_idxs"] = {1, 2}; }, "full_attn_idxs");
  expect_rejected("idxs_untied_bias", [](Json& c) { c["full_attn_idxs"] = {1, 9}; }, "full_attn_idxs");
  expect_rejected("types_tied", [](Json& c) { c["rope_parameters"]["rope_type"] = "yarn"; }, "rope_type");
  expect_rejected("types_tied", [](Json& c) { c["model_type"] = "lfm2_moe"; }, "model_type");
  expect_rejected("types_tied", [](Json& c) { c["num_key_value_heads"] = 3; }, "num_key_value_heads");
  expect_rejected("types_tied", [](Json& c) { c["conv_dim"] = 64; }, "conv_dim");
  expect_rejected("types_tied", [](Json& c) { c["block_use_swiglu"] = false; }, "block_use_swiglu");
  expect_rejected("types_tied", [](Json& c) { c["num_experts"] = 4; }, "num_experts");
  expect_rejected("types_tied", [](Json& c) { c.erase("conv_L_cache"); }, "conv_L_cache");
}

TEST_F(Lfm2Files, AnUnusedOrMissingTensorIsALoadError) {
  // The untied fixture's weights under the tied case's config: shapes disagree.
  std::filesystem::copy_file(fixture_root() / "types_tied" / "config.json", dir_ / "config.json");
  std::filesystem::copy_file(fixture_root() / "idxs_untied_bias" / "model.safetensors", dir_ / "model.safetensors");
  EXPECT_THROW((void)load_lfm2(dir_, backend::cpu::Precision::fp32), checkpoint::LoadError);
  // The biased checkpoint read as unbiased: its bias tensors are left over and named.
  nlohmann::ordered_json config = fixture_config("idxs_untied_bias");
  config["conv_bias"] = false;
  write_config(config);
  try {
    (void)load_lfm2(dir_, backend::cpu::Precision::fp32);
    ADD_FAILURE() << "loaded a checkpoint whose bias tensors the config does not use";
  } catch (const checkpoint::LoadError& error) {
    EXPECT_NE(std::string(error.what()).find(".bias"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace s1::lfm2
