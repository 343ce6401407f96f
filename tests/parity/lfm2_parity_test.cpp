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
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/linear.h"
#include "model/checkpoint/checkpoint.h"
#include "model/checkpoint/load_error.h"
#include "model/decoder/families.h"
#include "model/lfm2/config.h"
#include "model/lfm2/lfm2_model.h"

namespace s1::lfm2 {
namespace {

constexpr double logits_tolerance = 1e-4;
constexpr double hidden_absolute_tolerance = 1e-5;
constexpr double hidden_relative_tolerance = 1e-4;
constexpr double bf16_tolerance = 5e-2;
constexpr double prefix_tolerance = 1e-5;

const std::vector<std::size_t> lengths{1, 7, 64, 65, 130};
const std::vector<std::string> cases{"types_tied", "idxs_untied_bias"};

std::filesystem::path fixture_root() {
  const char* source = std::getenv("S1SERVE_SOURCE_DIR");
  return std::filesystem::path(source != nullptr ? source : S1SERVE_SOURCE_DIR_FALLBACK) / "tests" / "parity" / "lfm2";
}

struct Reference {
  std::vector<int32_t> ids;
  std::vector<float> hidden;  // [n, hidden]
  std::vector<float> logits;  // [vocab], last position
};

Reference read_reference(const std::string& name, std::size_t n) {
  const auto file = checkpoint::Checkpoint::open(fixture_root() / name / "reference.safetensors");
  const auto suffix = std::to_string(n);
  const checkpoint::TensorView& ids = file.get("ids_" + suffix);
  EXPECT_EQ(ids.dtype, checkpoint::DType::kI32);
  Reference reference;
  reference.ids.resize(static_cast<std::size_t>(ids.element_count()));
  std::memcpy(reference.ids.data(), ids.bytes.data(), reference.ids.size() * sizeof(int32_t));
  reference.hidden = checkpoint::to_float(file.get("hidden_" + suffix));
  reference.logits = checkpoint::to_float(file.get("logits_" + suffix));
  return reference;
}

std::vector<std::size_t> all_positions(std::size_t n) {
  std::vector<std::size_t> positions(n);
  for (std::size_t i = 0; i < n; ++i) positions[i] = i;
  return positions;
}

double max_abs(std::span<const float> values) {
  double largest = 0.0;
  for (const float value : values) largest = std::max(largest, static_cast<double>(std::fabs(value)));
  return largest;
}

double max_difference(std::span<const float> got, std::span<const float> expected) {
  EXPECT_EQ(got.size(), expected.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < std::min(got.size(), expected.size()); ++i) {
    const double error = std::fabs(static_cast<double>(got[i]) - expected[i]);
    worst = std::isnan(error) ? INFINITY : std::max(worst, error);
  }
  return worst;
}

std::vector<float> full_hidden(decoder::CausalDecoder& model, std::span<const int32_t> ids) {
  const std::vector<std::size_t> positions = all_positions(ids.size());
  const decoder::Branch branch{ids, positions};
  return std::move(model.forward(nullptr, std::span(&branch, 1), false).front().hidden);
}

void expect_rows_match_reference(std::span<const float> got, std::span<const float> expected, std::size_t width,
                                 const std::string& what) {
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double bound = hidden_absolute_tolerance + hidden_relative_tolerance * std::fabs(expected[i]);
    ASSERT_LE(std::fabs(got[i] - expected[i]), bound) << what << ", row " << i / width << ", column " << i % width;
  }
}

class Lfm2Parity : public ::testing::TestWithParam<std::string> {};

TEST_P(Lfm2Parity, Fp32MatchesTransformers) {
  // Through the family table, as contracts load chat checkpoints.
  const auto model = decoder::load_causal_decoder(fixture_root() / GetParam(), kernels::Precision::fp32);
  ASSERT_EQ(model->info().family, "lfm2");
  ASSERT_EQ(decoder::decoder_family_of(fixture_root() / GetParam()), "lfm2");
  for (const std::size_t n : lengths) {
    const Reference reference = read_reference(GetParam(), n);
    const std::vector<float> hidden = full_hidden(*model, reference.ids);
    expect_rows_match_reference(hidden, reference.hidden, model->info().hidden_size, "length " + std::to_string(n));
    const std::span<const float> last = std::span<const float>(hidden).last(model->info().hidden_size);
    const std::vector<float> logits = model->lm_head().all_logits(last);
    EXPECT_LE(max_difference(logits, reference.logits), logits_tolerance * max_abs(reference.logits))
        << "logits, length " << n;
  }
}

TEST_P(Lfm2Parity, Bf16WithinDocumentedBound) {
  if (!kernels::linear_supported(kernels::Precision::bf16)) GTEST_SKIP() << "this CPU cannot run bf16 matmuls";
  const auto model = load_lfm2(fixture_root() / GetParam(), kernels::Precision::bf16);
  for (const std::size_t n : lengths) {
    const Reference reference = read_reference(GetParam(), n);
    const std::vector<float> hidden = full_hidden(*model, reference.ids);
    EXPECT_LE(max_difference(hidden, reference.hidden), bf16_tolerance * max_abs(reference.hidden))
        << "hidden, length " << n;
    const std::vector<float> logits =
        model->lm_head().all_logits(std::span<const float>(hidden).last(model->info().hidden_size));
    EXPECT_LE(max_difference(logits, reference.logits), bf16_tolerance * max_abs(reference.logits))
        << "logits, length " << n;
  }
}

TEST_P(Lfm2Parity, SharedPrefixBranchesEqualFullPrompts) {
  const auto model = load_lfm2(fixture_root() / GetParam(), kernels::Precision::fp32);
  const Reference long_reference = read_reference(GetParam(), 130);
  const Reference other = read_reference(GetParam(), 65);
  const std::size_t prefix_length = 40;
  const std::span<const int32_t> ids(long_reference.ids);
  const auto prefix = model->run_prefix(ids.first(prefix_length));
  ASSERT_EQ(prefix->length(), prefix_length);

  // Branches of different lengths and tokens: one and two tokens (shorter than the conv kernel, so
  // the conv reads the prefix's carried inputs), and longer ones.
  const std::vector<std::vector<int32_t>> branch_tokens{
      std::vector<int32_t>(ids.begin() + prefix_length, ids.end()),
      std::vector<int32_t>(other.ids.begin(), other.ids.begin() + 17),
      std::vector<int32_t>{other.ids[40]},
      std::vector<int32_t>{other.ids[41], other.ids[42]},
  };
  std::vector<std::vector<std::size_t>> outputs;
  std::vector<decoder::Branch> branches;
  for (const auto& tokens : branch_tokens) outputs.push_back(all_positions(tokens.size()));
  for (std::size_t b = 0; b < branch_tokens.size(); ++b) branches.push_back({branch_tokens[b], outputs[b]});
  const auto shared = model->forward(prefix.get(), branches, true);
  ASSERT_EQ(shared.size(), branches.size());

  const std::size_t hidden_size = model->info().hidden_size;
  for (std::size_t b = 0; b < branches.size(); ++b) {
    std::vector<int32_t> full(ids.begin(), ids.begin() + prefix_length);
    full.insert(full.end(), branch_tokens[b].begin(), branch_tokens[b].end());
    const std::vector<float> unshared = full_hidden(*model, full);
    const auto expected = std::span<const float>(unshared).subspan(prefix_length * hidden_size);
    EXPECT_LE(max_difference(shared[b].hidden, expected), prefix_tolerance * std::max(1.0, max_abs(expected)))
        << "branch " << b;
    ASSERT_NE(shared[b].state, nullptr);
    EXPECT_EQ(shared[b].state->length(), full.size());
  }
  // The first branch completes the 130-token reference sequence: its rows are Transformers' rows.
  expect_rows_match_reference(shared[0].hidden,
                              std::span<const float>(long_reference.hidden).subspan(prefix_length * hidden_size),
                              hidden_size, "branch 0 against Transformers");

  // Kept states extend further: a second round (1 and 5 more tokens, outputs at selected positions
  // only) after each first-round branch equals the unshared forward again.
  const std::vector<int32_t> more(other.ids.begin() + 20, other.ids.begin() + 25);
  for (std::size_t b = 0; b < branches.size(); ++b) {
    const std::vector<std::size_t> none;
    const std::vector<std::size_t> first_and_last{0, 4};
    const decoder::Branch single{std::span(more).first(1), none};
    const decoder::Branch five{more, first_and_last};
    const std::vector<decoder::Branch> extensions{single, five};
    const std::unique_ptr<decoder::SequenceState> copy = shared[b].state->clone();
    const auto extended = model->forward(copy.get(), extensions, false);
    EXPECT_TRUE(extended[0].hidden.empty());
    std::vector<int32_t> full(ids.begin(), ids.begin() + prefix_length);
    full.insert(full.end(), branch_tokens[b].begin(), branch_tokens[b].end());
    full.insert(full.end(), more.begin(), more.end());
    const std::vector<float> unshared = full_hidden(*model, full);
    const std::size_t first_row = full.size() - more.size();
    std::vector<float> expected(unshared.begin() + static_cast<std::ptrdiff_t>(first_row * hidden_size),
                                unshared.begin() + static_cast<std::ptrdiff_t>((first_row + 1) * hidden_size));
    expected.insert(expected.end(), unshared.end() - static_cast<std::ptrdiff_t>(hidden_size), unshared.end());
    EXPECT_LE(max_difference(extended[1].hidden, expected), prefix_tolerance * std::max(1.0, max_abs(expected)))
        << "extension of branch " << b;
  }
  // The prefix itself was not modified: branching from it again gives identical rows.
  const auto again = model->forward(prefix.get(), std::span(branches).first(1), false);
  EXPECT_EQ(again[0].hidden, shared[0].hidden);
}

TEST_P(Lfm2Parity, TokenByTokenExtensionEqualsOneForward) {
  const auto model = load_lfm2(fixture_root() / GetParam(), kernels::Precision::fp32);
  const Reference reference = read_reference(GetParam(), 64);
  const std::span<const int32_t> ids(reference.ids);
  const std::size_t hidden_size = model->info().hidden_size;
  std::unique_ptr<decoder::SequenceState> state = model->run_prefix(ids.first(1));
  const std::vector<std::size_t> only_row{0};
  for (std::size_t position = 1; position < 20; ++position) {
    const decoder::Branch step{ids.subspan(position, 1), only_row};
    auto outputs = model->forward(state.get(), std::span(&step, 1), true);
    expect_rows_match_reference(outputs[0].hidden, std::span<const float>(reference.hidden).subspan(position * hidden_size, hidden_size),
                                hidden_size, "position " + std::to_string(position));
    state = std::move(outputs[0].state);
    ASSERT_EQ(state->length(), position + 1);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, Lfm2Parity, ::testing::ValuesIn(cases));

TEST(Lfm2Forward, RejectsBadCalls) {
  const auto model = load_lfm2(fixture_root() / "types_tied", kernels::Precision::fp32);
  const std::vector<int32_t> good{1, 2, 3};
  const std::vector<int32_t> out_of_vocabulary{1, static_cast<int32_t>(model->info().vocab_size)};
  const std::vector<int32_t> negative{-1};
  const std::vector<int32_t> empty;
  const std::vector<std::size_t> unordered{2, 1};
  const std::vector<std::size_t> past_end{3};
  const std::vector<int32_t> too_long(model->info().max_positions + 1, 1);
  const auto expect_rejected = [&](const decoder::SequenceState* prefix, decoder::Branch branch) {
    EXPECT_THROW((void)model->forward(prefix, std::span(&branch, 1), false), std::invalid_argument);
  };
  expect_rejected(nullptr, {out_of_vocabulary, {}});
  expect_rejected(nullptr, {negative, {}});
  expect_rejected(nullptr, {empty, {}});
  expect_rejected(nullptr, {good, unordered});
  expect_rejected(nullptr, {good, past_end});
  expect_rejected(nullptr, {too_long, {}});
  const std::vector<int32_t> almost(model->info().max_positions - 2, 1);
  const auto prefix = model->run_prefix(almost);
  expect_rejected(prefix.get(), {good, {}});
  // A state from another model is refused, not misread.
  const auto other = load_lfm2(fixture_root() / "idxs_untied_bias", kernels::Precision::fp32);
  const auto foreign = other->run_prefix(good);
  expect_rejected(foreign.get(), {good, {}});
}

class Lfm2Files : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("s1_lfm2_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

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

  std::filesystem::path dir_;
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
  EXPECT_THROW((void)load_lfm2(dir_, kernels::Precision::fp32), checkpoint::LoadError);
  // The biased checkpoint read as unbiased: its bias tensors are left over and named.
  nlohmann::ordered_json config = fixture_config("idxs_untied_bias");
  config["conv_bias"] = false;
  write_config(config);
  try {
    (void)load_lfm2(dir_, kernels::Precision::fp32);
    ADD_FAILURE() << "loaded a checkpoint whose bias tensors the config does not use";
  } catch (const checkpoint::LoadError& error) {
    EXPECT_NE(std::string(error.what()).find(".bias"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace s1::lfm2
