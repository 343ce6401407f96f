// Qwen3.5 hybrid decoder vs Transformers' Qwen3_5ForCausalLM / Qwen3_5ForConditionalGeneration on
// tiny random checkpoints (tools/reference/make_qwen3_5_fixtures.py → tests/parity/qwen3_5/), plus
// the structural properties models.md §5.3 asks for: branches after a shared prefix equal the full
// prompts run alone, several branches in one batch equal each run alone, causal mode never lets a
// later token change an earlier row, noncausal mode does (and refuses prefix reuse).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "backend/cpu/linear.h"
#include "model/checkpoint/checkpoint.h"
#include "model/checkpoint/load_error.h"
#include "model/qwen3_5/qwen3_5_model.h"

namespace s1::qwen3_5 {
namespace {

// Tolerances, fixed before comparing (models.md §5.4).
// fp32 engine vs fp32 Transformers, final-norm hidden states: |Δ| ≤ abs + rel·|ref|.
constexpr double hidden_abs_tolerance = 1e-5;
constexpr double hidden_rel_tolerance = 1e-4;
// Last-position logits: |Δ| ≤ 1e-4 × the logit scale (max |reference logit|).
constexpr double logit_tolerance = 1e-4;
// A branch after a shared prefix vs the same tokens run alone (both ours, fp32).
constexpr double prefix_tolerance = 1e-5;
// bf16 linear layers (operands rounded to bf16, fp32 accumulation) vs the fp32 reference on these
// random tiny models: |Δ logit| ≤ 5e-2 × the logit scale. Measured drift is 0.3–1.2 % of the scale
// (2026-11, AMX); the gate catches a wrong weight layout (errors of order the scale) and leaves room
// for bf16 rounding, which is all it documents.
constexpr double bf16_logit_tolerance = 5e-2;
// bf16 branches after a shared prefix vs the same prompts run alone in bf16, |Δ hidden| ≤ this × the
// largest |hidden|: only the order of the softmax sums differs, and rounding the attention output
// to bf16 for o_proj absorbs it (measured: bit-identical, 2026-11, AMX). A branch seeing another's
// keys or missing the prefix moves hidden rows by their own order.
constexpr double bf16_prefix_tolerance = 1e-2;

constexpr std::size_t lengths[] = {1, 63, 64, 65, 130};

std::filesystem::path fixture_root() {
  const char* source = std::getenv("S1SERVE_SOURCE_DIR");
  return std::filesystem::path(source != nullptr ? source : S1SERVE_SOURCE_DIR_FALLBACK) / "tests" / "parity" /
         "qwen3_5";
}

class Reference {
 public:
  explicit Reference(const std::string& name)
      : reference_(checkpoint::Checkpoint::open(fixture_root() / name / "reference.safetensors")) {}

  [[nodiscard]] std::vector<int32_t> ids(std::size_t n) const {
    const checkpoint::TensorView& view = reference_.get("ids_" + std::to_string(n));
    EXPECT_EQ(view.dtype, checkpoint::DType::kI32);
    std::vector<int32_t> out(view.bytes.size() / sizeof(int32_t));
    std::memcpy(out.data(), view.bytes.data(), out.size() * sizeof(int32_t));
    return out;
  }
  [[nodiscard]] std::vector<float> tensor(const std::string& name) const {
    return checkpoint::to_float(reference_.get(name));
  }

 private:
  checkpoint::Checkpoint reference_;
};

std::vector<std::size_t> every_position(std::size_t n) {
  std::vector<std::size_t> positions(n);
  for (std::size_t i = 0; i < n; ++i) positions[i] = i;
  return positions;
}

// Final-norm hidden rows at every position of `tokens`, from the empty sequence.
std::vector<float> run_alone(decoder::CausalDecoder& model, std::span<const int32_t> tokens) {
  const auto positions = every_position(tokens.size());
  const decoder::Branch branch{tokens, positions};
  return model.forward(nullptr, std::span<const decoder::Branch>(&branch, 1), false).front().hidden;
}

// The full prompt a branch stands for (the shared prefix, then the branch's own tokens), run alone.
std::vector<float> run_prefix_and_suffix_alone(decoder::CausalDecoder& model, std::span<const int32_t> prefix,
                                               std::span<const int32_t> suffix) {
  std::vector<int32_t> full(prefix.begin(), prefix.end());
  full.insert(full.end(), suffix.begin(), suffix.end());
  return run_alone(model, full);
}

void expect_hidden_near(std::span<const float> actual, std::span<const float> expected, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  double worst = 0.0;
  std::size_t failures = 0;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const double diff = std::abs(static_cast<double>(actual[i]) - expected[i]);
    worst = std::max(worst, diff);
    if (diff > hidden_abs_tolerance + hidden_rel_tolerance * std::abs(expected[i])) ++failures;
  }
  EXPECT_EQ(failures, 0U) << what << ": max |Δ| " << worst;
}

double max_abs_difference(std::span<const float> a, std::span<const float> b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]));
  }
  return worst;
}

double logit_scale(std::span<const float> logits) {
  double scale = 0.0;
  for (const float v : logits) scale = std::max(scale, std::abs(static_cast<double>(v)));
  return scale;
}

class Qwen35Parity : public ::testing::TestWithParam<std::string> {};

TEST_P(Qwen35Parity, HiddenStatesAndLogitsMatchTransformers) {
  const auto model = load_qwen3_5(fixture_root() / GetParam(), backend::cpu::Precision::fp32);
  const Reference reference(GetParam());
  EXPECT_EQ(model->info().family, "qwen3_5");
  EXPECT_EQ(model->info().prefix_granularity, 64U);
  const std::size_t hidden = model->info().hidden_size;
  for (const std::size_t n : lengths) {
    const auto ids = reference.ids(n);
    ASSERT_EQ(ids.size(), n);
    const auto actual = run_alone(*model, ids);
    expect_hidden_near(actual, reference.tensor("hidden_" + std::to_string(n)), GetParam() + " length " + std::to_string(n));
    const auto logits = model->lm_head().all_logits(std::span<const float>(actual).last(hidden));
    const auto expected = reference.tensor("logits_" + std::to_string(n));
    EXPECT_LE(max_abs_difference(logits, expected), logit_tolerance * logit_scale(expected))
        << GetParam() << " length " << n;
  }
}

TEST_P(Qwen35Parity, AllLengthsInOneBatchMatchTransformers) {
  const auto model = load_qwen3_5(fixture_root() / GetParam(), backend::cpu::Precision::fp32);
  const Reference reference(GetParam());
  std::vector<std::vector<int32_t>> ids;
  std::vector<std::vector<std::size_t>> positions;
  for (const std::size_t n : lengths) {
    ids.push_back(reference.ids(n));
    positions.push_back(every_position(n));
  }
  std::vector<decoder::Branch> branches;
  for (std::size_t i = 0; i < ids.size(); ++i) branches.push_back(decoder::Branch{ids[i], positions[i]});
  const auto outputs = model->forward(nullptr, branches, false);
  ASSERT_EQ(outputs.size(), branches.size());
  for (std::size_t i = 0; i < branches.size(); ++i) {
    expect_hidden_near(outputs[i].hidden, reference.tensor("hidden_" + std::to_string(lengths[i])),
                       GetParam() + " batched length " + std::to_string(lengths[i]));
  }
}

TEST_P(Qwen35Parity, NoncausalFullAttentionMatchesTransformers) {
  const auto model = load_qwen3_5(fixture_root() / GetParam(), backend::cpu::Precision::fp32, true);
  const Reference reference(GetParam());
  for (const std::size_t n : {65UL, 130UL}) {
    expect_hidden_near(run_alone(*model, reference.ids(n)), reference.tensor("noncausal_hidden_" + std::to_string(n)),
                       GetParam() + " noncausal length " + std::to_string(n));
  }
}

TEST_P(Qwen35Parity, Bf16LinearLayersStayCloseToTheFp32Reference) {
  if (!backend::cpu::linear_supported(backend::cpu::Precision::bf16)) GTEST_SKIP() << "no bf16 matmul on this CPU";
  const auto model = load_qwen3_5(fixture_root() / GetParam(), backend::cpu::Precision::bf16);
  const Reference reference(GetParam());
  const std::size_t hidden = model->info().hidden_size;
  for (const std::size_t n : lengths) {
    const auto actual = run_alone(*model, reference.ids(n));
    const auto logits = model->lm_head().all_logits(std::span<const float>(actual).last(hidden));
    const auto expected = reference.tensor("logits_" + std::to_string(n));
    EXPECT_LE(max_abs_difference(logits, expected), bf16_logit_tolerance * logit_scale(expected))
        << GetParam() << " bf16 length " << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Qwen35Parity, ::testing::Values("tied8", "vl_untied"));

// Branches after a shared prefix (on and off the 64-token chunk grid) equal the full prompts run alone.
// tests/fixtures/gguf/tiny-qwen35.gguf is tests/fixtures/tiny-qwen3_5-chat as llama.cpp's converter
// writes it (tools/reference/make_gguf_fixtures.py): its keys as config, its weights with the
// converter's value changes, which loading undoes up to fp32 rounding (w + 1 - 1, log(exp(a))), so
// hidden rows and logits match the safetensors directory within the fp32 parity tolerances.
void expect_gguf_matches_its_directory(const std::string& gguf_name) {
  const std::filesystem::path fixtures = fixture_root().parent_path().parent_path() / "fixtures";
  const auto from_gguf = load_qwen3_5(fixtures / "gguf" / gguf_name, backend::cpu::Precision::fp32);
  const auto from_directory = load_qwen3_5(fixtures / "tiny-qwen3_5-chat", backend::cpu::Precision::fp32);
  EXPECT_EQ(from_gguf->info().vocab_size, from_directory->info().vocab_size);
  const std::vector<int32_t> ids{3030, 12, 500, 7, 2999, 41, 3031, 8, 3033, 100, 200, 300, 5, 6};
  const auto expected = run_alone(*from_directory, ids);
  expect_hidden_near(run_alone(*from_gguf, ids), expected, gguf_name);
  const std::size_t hidden = from_gguf->info().hidden_size;
  const auto last = std::span<const float>(expected).last(hidden);
  const auto reference_logits = from_directory->lm_head().all_logits(last);
  const auto actual = run_alone(*from_gguf, ids);
  EXPECT_LE(max_abs_difference(from_gguf->lm_head().all_logits(std::span<const float>(actual).last(hidden)),
                               reference_logits),
            logit_tolerance * logit_scale(reference_logits))
      << gguf_name;
}

TEST(Qwen35Gguf, LoadsTheSameModelAsItsSafetensorsDirectory) { expect_gguf_matches_its_directory("tiny-qwen35.gguf"); }

// tests/fixtures/gguf/converted/tiny-qwen35-f32.gguf is the same directory converted by llama.cpp's own
// convert_hf_to_gguf.py --outtype f32 --no-mtp (tools/reference/make_gguf_converter_fixtures.py).
TEST(Qwen35Gguf, LlamaCppsConversionGivesTheLogitsOfItsSafetensorsDirectory) {
  expect_gguf_matches_its_directory("converted/tiny-qwen35-f32.gguf");
}

TEST(Qwen35Prefix, BranchesAfterASharedPrefixEqualTheFullPrompts) {
  const auto model = load_qwen3_5(fixture_root() / "tied8", backend::cpu::Precision::fp32);
  const Reference reference("tied8");
  const auto base = reference.ids(130);
  const auto other = reference.ids(65);
  for (const std::size_t prefix_length : {64UL, 50UL}) {
    const std::span<const int32_t> prefix_tokens(base.data(), prefix_length);
    const auto prefix = model->run_prefix(prefix_tokens);
    ASSERT_EQ(prefix->length(), prefix_length);
    // Three different continuations: the rest of the 130-token prompt, a 65-token one, a single token.
    const std::vector<std::vector<int32_t>> suffixes = {
        std::vector<int32_t>(base.begin() + static_cast<std::ptrdiff_t>(prefix_length), base.end()),
        other,
        std::vector<int32_t>{other.back()},
    };
    std::vector<std::vector<std::size_t>> positions;
    std::vector<decoder::Branch> branches;
    for (const auto& suffix : suffixes) positions.push_back(every_position(suffix.size()));
    for (std::size_t i = 0; i < suffixes.size(); ++i) branches.push_back(decoder::Branch{suffixes[i], positions[i]});
    const auto outputs = model->forward(prefix.get(), branches, true);
    ASSERT_EQ(outputs.size(), suffixes.size());
    const std::size_t hidden = model->info().hidden_size;
    for (std::size_t i = 0; i < suffixes.size(); ++i) {
      const auto alone = run_prefix_and_suffix_alone(*model, prefix_tokens, suffixes[i]);
      const auto tail = std::span<const float>(alone).subspan(prefix_length * hidden);
      EXPECT_LE(max_abs_difference(outputs[i].hidden, tail), prefix_tolerance)
          << "prefix " << prefix_length << ", branch " << i;
      ASSERT_NE(outputs[i].state, nullptr);
      EXPECT_EQ(outputs[i].state->length(), prefix_tokens.size() + suffixes[i].size());
    }
    // The first branch recreates the reference prompt: compare with Transformers as well.
    const auto expected = reference.tensor("hidden_130");
    expect_hidden_near(outputs[0].hidden, std::span<const float>(expected).subspan(prefix_length * hidden),
                       "branch after prefix " + std::to_string(prefix_length));

    // A kept branch state continues like the longer prompt (state of a state, and the prefix untouched).
    const std::vector<int32_t> next = {base[3], base[7]};
    const std::vector<std::size_t> next_positions = {0, 1};
    const decoder::Branch continuation{next, next_positions};
    const auto continued =
        model->forward(outputs[1].state.get(), std::span<const decoder::Branch>(&continuation, 1), false);
    std::vector<int32_t> longer(prefix_tokens.begin(), prefix_tokens.end());
    longer.insert(longer.end(), other.begin(), other.end());
    longer.insert(longer.end(), next.begin(), next.end());
    const auto longer_alone = run_alone(*model, longer);
    EXPECT_LE(max_abs_difference(continued.front().hidden, std::span<const float>(longer_alone).last(2 * hidden)),
              prefix_tolerance)
        << "continued state after prefix " << prefix_length;
    const auto again = model->forward(prefix.get(), std::span<const decoder::Branch>(branches.data(), 1), false);
    EXPECT_EQ(again.front().hidden, outputs[0].hidden) << "the prefix state must not change";
  }
}

// Many branches of mixed lengths (one token, off and on the chunk grid, repeats) without kept
// states, as a request's questions run: each reads the shared prefix state (left unchanged) and
// equals its full prompt run alone.
TEST(Qwen35Prefix, ManyBranchesWithoutKeptStatesEqualTheFullPrompts) {
  const auto model = load_qwen3_5(fixture_root() / "tied8", backend::cpu::Precision::fp32);
  const Reference reference("tied8");
  const auto base = reference.ids(130);
  const std::size_t prefix_length = 50;
  const std::span<const int32_t> prefix_tokens(base.data(), prefix_length);
  const auto prefix = model->run_prefix(prefix_tokens);
  std::vector<std::vector<int32_t>> suffixes;
  for (const std::size_t length : {1UL, 5UL, 1UL, 14UL, 64UL, 3UL, 80UL}) {
    const auto from = base.begin() + static_cast<std::ptrdiff_t>(130 - length - suffixes.size());
    suffixes.emplace_back(from, from + static_cast<std::ptrdiff_t>(length));
  }
  std::vector<std::size_t> last_positions;
  for (const auto& suffix : suffixes) last_positions.push_back(suffix.size() - 1);
  std::vector<decoder::Branch> branches;
  for (std::size_t i = 0; i < suffixes.size(); ++i) {
    branches.push_back(decoder::Branch{suffixes[i], std::span<const std::size_t>(&last_positions[i], 1)});
  }
  const auto outputs = model->forward(prefix.get(), branches, false);
  ASSERT_EQ(outputs.size(), suffixes.size());
  const std::size_t hidden = model->info().hidden_size;
  for (std::size_t i = 0; i < suffixes.size(); ++i) {
    const auto alone = run_prefix_and_suffix_alone(*model, prefix_tokens, suffixes[i]);
    EXPECT_LE(max_abs_difference(outputs[i].hidden, std::span<const float>(alone).last(hidden)), prefix_tolerance)
        << "branch " << i << " of " << suffixes[i].size() << " tokens";
    EXPECT_EQ(outputs[i].state, nullptr);
  }
  const auto again = model->forward(prefix.get(), branches, false);
  for (std::size_t i = 0; i < suffixes.size(); ++i) {
    EXPECT_EQ(again[i].hidden, outputs[i].hidden) << "the prefix state must not change (branch " << i << ")";
  }
}

// The same in bf16, where attention runs on AMX tiles (head_dim 32) with the prefix laid out once
// for all branches: each branch stays within bf16 rounding of its full prompt run alone (which lays
// out every key per query block instead).
TEST(Qwen35Prefix, Bf16BranchesAfterASharedPrefixStayCloseToTheFullPrompts) {
  if (!backend::cpu::linear_supported(backend::cpu::Precision::bf16)) GTEST_SKIP() << "no bf16 matmul on this CPU";
  const auto model = load_qwen3_5(fixture_root() / "tied8", backend::cpu::Precision::bf16);
  const Reference reference("tied8");
  const auto base = reference.ids(130);
  const std::size_t prefix_length = 50;
  const std::span<const int32_t> prefix_tokens(base.data(), prefix_length);
  const auto prefix = model->run_prefix(prefix_tokens);
  std::vector<std::vector<int32_t>> suffixes;
  for (const std::size_t length : {1UL, 14UL, 80UL}) {
    const auto from = base.begin() + static_cast<std::ptrdiff_t>(130 - length);
    suffixes.emplace_back(from, from + static_cast<std::ptrdiff_t>(length));
  }
  std::vector<std::vector<std::size_t>> positions;
  std::vector<decoder::Branch> branches;
  for (const auto& suffix : suffixes) positions.push_back(every_position(suffix.size()));
  for (std::size_t i = 0; i < suffixes.size(); ++i) branches.push_back(decoder::Branch{suffixes[i], positions[i]});
  const auto outputs = model->forward(prefix.get(), branches, false);
  const std::size_t hidden = model->info().hidden_size;
  for (std::size_t i = 0; i < suffixes.size(); ++i) {
    const auto alone = run_prefix_and_suffix_alone(*model, prefix_tokens, suffixes[i]);
    const auto tail = std::span<const float>(alone).subspan(prefix_length * hidden);
    EXPECT_LE(max_abs_difference(outputs[i].hidden, tail), bf16_prefix_tolerance * logit_scale(tail))
        << "branch " << i << " of " << suffixes[i].size() << " tokens";
  }
}

TEST(Qwen35Noncausal, LaterTokensChangeEarlierRowsOnlyInNoncausalMode) {
  const Reference reference("tied8");
  auto ids = reference.ids(65);
  auto changed = ids;
  changed.back() = (changed.back() + 1) % 96;
  const std::size_t hidden = 32;
  const std::size_t earlier = (ids.size() - 1) * hidden;

  const auto causal = load_qwen3_5(fixture_root() / "tied8", backend::cpu::Precision::fp32);
  EXPECT_EQ(max_abs_difference(std::span<const float>(run_alone(*causal, ids)).first(earlier),
                               std::span<const float>(run_alone(*causal, changed)).first(earlier)),
            0.0);

  const auto noncausal = load_qwen3_5(fixture_root() / "tied8", backend::cpu::Precision::fp32, true);
  EXPECT_GT(max_abs_difference(std::span<const float>(run_alone(*noncausal, ids)).first(earlier),
                               std::span<const float>(run_alone(*noncausal, changed)).first(earlier)),
            1e-4);

  // Prefix reuse is invalid in noncausal mode, whoever made the prefix state.
  const std::span<const int32_t> first(ids.data(), 8);
  const auto prefix = causal->run_prefix(first);
  const std::vector<std::size_t> position = {0};
  const decoder::Branch branch{std::span<const int32_t>(ids).subspan(8, 1), position};
  EXPECT_THROW((void)noncausal->forward(prefix.get(), std::span<const decoder::Branch>(&branch, 1), false),
               std::invalid_argument);
}

TEST(Qwen35Errors, BadCallArgumentsThrowInvalidArgument) {
  const auto model = load_qwen3_5(fixture_root() / "tied8", backend::cpu::Precision::fp32);
  const std::vector<int32_t> good = {1, 2, 3};
  const std::vector<int32_t> bad_id = {1, 96};
  const std::vector<int32_t> empty;
  const std::vector<std::size_t> unordered = {1, 0};
  const std::vector<std::size_t> past_end = {3};
  const std::vector<std::size_t> none;
  for (const decoder::Branch& branch : {decoder::Branch{bad_id, none}, decoder::Branch{empty, none},
                                        decoder::Branch{good, unordered}, decoder::Branch{good, past_end}}) {
    EXPECT_THROW((void)model->forward(nullptr, std::span<const decoder::Branch>(&branch, 1), false),
                 std::invalid_argument);
  }
  const std::vector<int32_t> too_long(513, 1);
  const decoder::Branch long_branch{too_long, none};
  EXPECT_THROW((void)model->forward(nullptr, std::span<const decoder::Branch>(&long_branch, 1), false),
               std::invalid_argument);
  // A state from another model instance does not fit this one.
  const auto other = load_qwen3_5(fixture_root() / "vl_untied", backend::cpu::Precision::fp32);
  const auto foreign = other->run_prefix(good);
  const decoder::Branch branch{good, none};
  EXPECT_THROW((void)model->forward(foreign.get(), std::span<const decoder::Branch>(&branch, 1), false),
               std::invalid_argument);
}

// Writes the tied8 checkpoint with one config.json edit into a temporary directory.
std::filesystem::path edited_copy(const std::string& from, const std::string& to, const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("s1_qwen3_5_" + name);
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(fixture_root() / "tied8" / "model.safetensors", dir / "model.safetensors",
                             std::filesystem::copy_options::overwrite_existing);
  std::ifstream in(fixture_root() / "tied8" / "config.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  std::ofstream(dir / "config.json") << text;
  return dir;
}

TEST(Qwen35Config, UnsupportedSettingsAreLoadErrors) {
  const std::vector<std::pair<std::string, std::string>> edits = {
      {R"("hidden_act": "silu")", R"("hidden_act": "gelu")"},
      {R"("rope_type": "default")", R"("rope_type": "yarn")"},
      {R"("attention_bias": false)", R"("attention_bias": true)"},
      {R"("model_type": "qwen3_5_text")", R"("model_type": "qwen3_5_moe_text")"},
      {R"("partial_rotary_factor": 0.25)", R"("partial_rotary_factor": 0.5)"},  // mrope_section no longer fits
      {R"("full_attention_interval": 4)", R"("full_attention_interval": 4, "sliding_window": 128)"},
      {R"("num_hidden_layers": 8)", R"("num_hidden_layers": 9)"},  // layer 8's weights are missing
  };
  for (std::size_t i = 0; i < edits.size(); ++i) {
    const auto dir = edited_copy(edits[i].first, edits[i].second, "config_" + std::to_string(i));
    EXPECT_THROW((void)load_qwen3_5(dir, backend::cpu::Precision::fp32), checkpoint::LoadError) << edits[i].second;
    std::filesystem::remove_all(dir);
  }
}

TEST(Qwen35Config, RopeSettingsLoadFromEitherSpelling) {
  // A null rope_scaling next to rope_parameters (as Transformers writes unset keys), and the older
  // top-level rope_theta + rope_scaling object, both give the same model.
  const Reference reference("tied8");
  const auto ids = reference.ids(65);
  const auto original = run_alone(*load_qwen3_5(fixture_root() / "tied8", backend::cpu::Precision::fp32), ids);
  const std::vector<std::pair<std::string, std::string>> edits = {
      {R"("rope_parameters": {)", R"("rope_scaling": null, "rope_parameters": {)"},
      {R"("rope_parameters": {)", R"("rope_theta": 10000.0, "rope_scaling": {)"},
  };
  for (std::size_t i = 0; i < edits.size(); ++i) {
    const auto dir = edited_copy(edits[i].first, edits[i].second, "rope_" + std::to_string(i));
    EXPECT_EQ(run_alone(*load_qwen3_5(dir, backend::cpu::Precision::fp32), ids), original) << edits[i].second;
    std::filesystem::remove_all(dir);
  }
  const auto both = edited_copy(R"("rope_parameters": {)", R"("rope_scaling": {"rope_type": "default"}, "rope_parameters": {)",
                                "rope_both");
  EXPECT_THROW((void)load_qwen3_5(both, backend::cpu::Precision::fp32), checkpoint::LoadError);
  std::filesystem::remove_all(both);
}

TEST(Qwen35Config, ExplicitLayerTypesMustMatchTheWeights) {
  // Declaring layer 0 full attention while the checkpoint holds GDN weights there fails at load.
  const auto dir = edited_copy(R"("full_attention_interval": 4)",
                               R"("layer_types": ["full_attention", "linear_attention", "linear_attention",)"
                               R"( "full_attention", "linear_attention", "linear_attention", "linear_attention",)"
                               R"( "full_attention"])",
                               "layer_types");
  EXPECT_THROW((void)load_qwen3_5(dir, backend::cpu::Precision::fp32), checkpoint::LoadError);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace s1::qwen3_5
