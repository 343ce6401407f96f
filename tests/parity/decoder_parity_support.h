// What the causal-decoder parity tests (qwen3, lfm2) share: the fixtures' reference tensors, the
// error measures, the hidden-row tolerance, and the checks every family's forward must pass the same
// way (shared-prefix branches, token-by-token states, refused calls).
//
// Tolerances, declared before comparing:
//  fp32 hidden (final norm): |Δ| ≤ 1e-5 + 1e-4 · |reference| per element;
//  prefix sharing (same arithmetic, only the matmul row count and so the reduction blocking can
//  differ): max |Δ| ≤ 1e-5 · max(1, max |unshared|).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "../unit/support/scratch_directory.h"
#include "model/checkpoint/checkpoint.h"
#include "model/decoder/causal_decoder.h"

namespace s1::parity {

inline constexpr double hidden_absolute_tolerance = 1e-5;
inline constexpr double hidden_relative_tolerance = 1e-4;
inline constexpr double prefix_tolerance = 1e-5;

// tests/parity/<family> in the source tree (S1SERVE_SOURCE_DIR overrides the configured one).
inline std::filesystem::path decoder_fixture_root(std::string_view family) {
  const char* source = std::getenv("S1SERVE_SOURCE_DIR");
  return std::filesystem::path(source != nullptr ? source : S1SERVE_SOURCE_DIR_FALLBACK) / "tests" / "parity" /
         family;
}

// The sequence lengths every decoder fixture's reference.safetensors holds (LENGTHS in
// tools/reference/make_{qwen3,lfm2}_fixtures.py).
inline const std::vector<std::size_t> reference_lengths{1, 7, 64, 65, 130};

struct DecoderReference {
  std::vector<int32_t> ids;
  std::vector<float> hidden;  // [n, hidden]
  std::vector<float> logits;  // [vocab], last position
};

// The length-`n` sequence of `fixture`/reference.safetensors: ids_<n>, hidden_<n>, logits_<n>.
inline DecoderReference read_decoder_reference(const std::filesystem::path& fixture, std::size_t n) {
  const auto file = checkpoint::Checkpoint::open(fixture / "reference.safetensors");
  const auto suffix = std::to_string(n);
  const checkpoint::TensorView& ids = file.get("ids_" + suffix);
  EXPECT_EQ(ids.dtype, checkpoint::DType::kI32);
  DecoderReference reference;
  reference.ids.resize(static_cast<std::size_t>(ids.element_count()));
  std::memcpy(reference.ids.data(), ids.bytes.data(), reference.ids.size() * sizeof(int32_t));
  reference.hidden = checkpoint::to_float(file.get("hidden_" + suffix));
  reference.logits = checkpoint::to_float(file.get("logits_" + suffix));
  return reference;
}

inline std::vector<std::size_t> all_positions(std::size_t n) {
  std::vector<std::size_t> positions(n);
  for (std::size_t i = 0; i < n; ++i) positions[i] = i;
  return positions;
}

inline double max_abs(std::span<const float> values) {
  double largest = 0.0;
  for (const float value : values) largest = std::max(largest, static_cast<double>(std::fabs(value)));
  return largest;
}

// max |got − expected|, infinite where a NaN appears.
inline double max_difference(std::span<const float> got, std::span<const float> expected) {
  EXPECT_EQ(got.size(), expected.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < std::min(got.size(), expected.size()); ++i) {
    const double error = std::fabs(static_cast<double>(got[i]) - expected[i]);
    worst = std::isnan(error) ? INFINITY : std::max(worst, error);
  }
  return worst;
}

// Final-norm hidden rows at every position of `ids` from the empty sequence.
inline std::vector<float> full_hidden(decoder::CausalDecoder& model, std::span<const int32_t> ids) {
  const std::vector<std::size_t> positions = all_positions(ids.size());
  const decoder::Branch branch{ids, positions};
  return std::move(model.forward(nullptr, std::span(&branch, 1), false).front().hidden);
}

// Every element within the fp32 hidden-row tolerance of the reference's.
inline void expect_rows_match_reference(std::span<const float> got, std::span<const float> expected,
                                        std::size_t width, const std::string& what) {
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double bound = hidden_absolute_tolerance + hidden_relative_tolerance * std::fabs(expected[i]);
    ASSERT_LE(std::fabs(got[i] - expected[i]), bound) << what << ", row " << i / width << ", column " << i % width;
  }
}

// fp32 against Transformers: the hidden rows of `reference.ids` within the hidden-row tolerance, and
// the last position's logits within `tolerance` · the largest |reference logit|, from all_logits and
// from the label readout path (double accumulation over gathered rows) alike.
inline void expect_fp32_matches_reference(decoder::CausalDecoder& model, const DecoderReference& reference,
                                          double tolerance) {
  const std::size_t n = reference.ids.size();
  const std::vector<float> hidden = full_hidden(model, reference.ids);
  expect_rows_match_reference(hidden, reference.hidden, model.info().hidden_size, "hidden, length " + std::to_string(n));
  const std::span<const float> last = std::span<const float>(hidden).last(model.info().hidden_size);
  const double bound = tolerance * max_abs(reference.logits);
  const std::vector<float> logits = model.lm_head().all_logits(last);
  EXPECT_LE(max_difference(logits, reference.logits), bound) << "logits, length " << n;
  const std::vector<int32_t> labels{0, 5, static_cast<int32_t>(model.info().vocab_size - 1)};
  const std::vector<double> gathered = model.lm_head().gather_logits(last, labels);
  for (std::size_t i = 0; i < labels.size(); ++i)
    EXPECT_NEAR(gathered[i], reference.logits[static_cast<std::size_t>(labels[i])], bound)
        << "label " << labels[i] << ", length " << n;
}

// expect_fp32_matches_reference at every reference length of `fixture`.
inline void expect_fp32_matches_references(decoder::CausalDecoder& model, const std::filesystem::path& fixture,
                                           double tolerance) {
  for (const std::size_t n : reference_lengths) {
    expect_fp32_matches_reference(model, read_decoder_reference(fixture, n), tolerance);
  }
}

// The hidden rows of `reference.ids` and the last position's logits each within `tolerance` · the
// largest |reference| value (a bound for arithmetic whose error scales with the values, as bf16's).
inline void expect_within_scaled_bound(decoder::CausalDecoder& model, const DecoderReference& reference,
                                       double tolerance) {
  const std::size_t n = reference.ids.size();
  const std::vector<float> hidden = full_hidden(model, reference.ids);
  EXPECT_LE(max_difference(hidden, reference.hidden), tolerance * max_abs(reference.hidden)) << "hidden, length " << n;
  const std::vector<float> logits =
      model.lm_head().all_logits(std::span<const float>(hidden).last(model.info().hidden_size));
  EXPECT_LE(max_difference(logits, reference.logits), tolerance * max_abs(reference.logits)) << "logits, length " << n;
}

// expect_within_scaled_bound at every reference length of `fixture`.
inline void expect_within_scaled_bound_at_every_length(decoder::CausalDecoder& model,
                                                       const std::filesystem::path& fixture, double tolerance) {
  for (const std::size_t n : reference_lengths) {
    expect_within_scaled_bound(model, read_decoder_reference(fixture, n), tolerance);
  }
}

// Branches after the first `prefix_length` tokens of `long_reference` (whose first branch must be the
// rest of that sequence) equal the full prompts run alone and, for the first, Transformers' rows; their
// kept states extend by a second round (1 and 5 more tokens of `more`, outputs at selected positions
// only) equal to the unshared forward again; the prefix is left as it was.
inline void expect_shared_prefix_branches_equal_full_prompts(decoder::CausalDecoder& model,
                                                             const DecoderReference& long_reference,
                                                             std::size_t prefix_length,
                                                             const std::vector<std::vector<int32_t>>& branch_tokens,
                                                             const std::vector<int32_t>& more) {
  ASSERT_EQ(more.size(), 5U);
  const std::span<const int32_t> ids(long_reference.ids);
  const auto prefix = model.run_prefix(ids.first(prefix_length));
  ASSERT_EQ(prefix->length(), prefix_length);

  std::vector<std::vector<std::size_t>> outputs;
  std::vector<decoder::Branch> branches;
  for (const auto& tokens : branch_tokens) outputs.push_back(all_positions(tokens.size()));
  for (std::size_t b = 0; b < branch_tokens.size(); ++b) branches.push_back({branch_tokens[b], outputs[b]});
  const auto shared = model.forward(prefix.get(), branches, true);
  ASSERT_EQ(shared.size(), branches.size());

  const std::size_t hidden_size = model.info().hidden_size;
  for (std::size_t b = 0; b < branches.size(); ++b) {
    std::vector<int32_t> full(ids.begin(), ids.begin() + prefix_length);
    full.insert(full.end(), branch_tokens[b].begin(), branch_tokens[b].end());
    const std::vector<float> unshared = full_hidden(model, full);
    const auto expected = std::span<const float>(unshared).subspan(prefix_length * hidden_size);
    EXPECT_LE(max_difference(shared[b].hidden, expected), prefix_tolerance * std::max(1.0, max_abs(expected)))
        << "branch " << b;
    ASSERT_NE(shared[b].state, nullptr);
    EXPECT_EQ(shared[b].state->length(), full.size());
  }
  // The first branch completes the reference sequence: its rows are Transformers' rows.
  expect_rows_match_reference(shared[0].hidden,
                              std::span<const float>(long_reference.hidden).subspan(prefix_length * hidden_size),
                              hidden_size, "branch 0 against Transformers");

  for (std::size_t b = 0; b < branches.size(); ++b) {
    const std::vector<std::size_t> none;
    const std::vector<std::size_t> first_and_last{0, 4};
    const decoder::Branch single{std::span(more).first(1), none};
    const decoder::Branch five{more, first_and_last};
    const std::vector<decoder::Branch> extensions{single, five};
    const std::unique_ptr<memory::SequenceMemory> copy = shared[b].state->clone();
    const auto extended = model.forward(copy.get(), extensions, false);
    EXPECT_TRUE(extended[0].hidden.empty());
    std::vector<int32_t> full(ids.begin(), ids.begin() + prefix_length);
    full.insert(full.end(), branch_tokens[b].begin(), branch_tokens[b].end());
    full.insert(full.end(), more.begin(), more.end());
    const std::vector<float> unshared = full_hidden(model, full);
    const std::size_t first_row = full.size() - more.size();
    std::vector<float> expected(unshared.begin() + static_cast<std::ptrdiff_t>(first_row * hidden_size),
                                unshared.begin() + static_cast<std::ptrdiff_t>((first_row + 1) * hidden_size));
    expected.insert(expected.end(), unshared.end() - static_cast<std::ptrdiff_t>(hidden_size), unshared.end());
    EXPECT_LE(max_difference(extended[1].hidden, expected), prefix_tolerance * std::max(1.0, max_abs(expected)))
        << "extension of branch " << b;
  }
  // The prefix itself was not modified: branching from it again gives identical rows.
  const auto again = model.forward(prefix.get(), std::span(branches).first(1), false);
  EXPECT_EQ(again[0].hidden, shared[0].hidden);
}

// The shared-prefix check on a fixture's 130- and 65-token references: a 40-token prefix of the
// first, and branches of different lengths and tokens (the rest of the first, 17 tokens of the second,
// and one and two tokens: shorter than a short-conv kernel, so a conv reads the prefix's carried
// inputs).
inline void expect_reference_branches_equal_full_prompts(decoder::CausalDecoder& model,
                                                         const std::filesystem::path& fixture) {
  const DecoderReference long_reference = read_decoder_reference(fixture, 130);
  const DecoderReference other = read_decoder_reference(fixture, 65);
  const std::size_t prefix_length = 40;
  const std::vector<std::vector<int32_t>> branch_tokens{
      std::vector<int32_t>(long_reference.ids.begin() + prefix_length, long_reference.ids.end()),
      std::vector<int32_t>(other.ids.begin(), other.ids.begin() + 17),
      std::vector<int32_t>{other.ids[40]},
      std::vector<int32_t>{other.ids[41], other.ids[42]},
  };
  expect_shared_prefix_branches_equal_full_prompts(model, long_reference, prefix_length, branch_tokens,
                                                   std::vector<int32_t>(other.ids.begin() + 20, other.ids.begin() + 25));
}

// One-token steps from the state after `reference`'s first `first` tokens up to position `end`: every
// step's row is Transformers' row at that position, and the kept state grows by one each time.
inline void expect_token_by_token_rows_match(decoder::CausalDecoder& model, const DecoderReference& reference,
                                             std::size_t first, std::size_t end) {
  const std::span<const int32_t> ids(reference.ids);
  const std::size_t hidden_size = model.info().hidden_size;
  std::unique_ptr<memory::SequenceMemory> state = model.run_prefix(ids.first(first));
  const std::vector<std::size_t> only_row{0};
  for (std::size_t position = first; position < end; ++position) {
    const decoder::Branch step{ids.subspan(position, 1), only_row};
    auto outputs = model.forward(state.get(), std::span(&step, 1), true);
    expect_rows_match_reference(outputs[0].hidden,
                                std::span<const float>(reference.hidden).subspan(position * hidden_size, hidden_size),
                                hidden_size, "position " + std::to_string(position));
    state = std::move(outputs[0].state);
    ASSERT_EQ(state->length(), position + 1);
  }
}

// forward refuses (std::invalid_argument) out-of-vocabulary, negative and empty ids, unordered or
// out-of-range output positions, a total length over max_positions, and a state of `other` (a model
// of the same family with another shape).
inline void expect_bad_calls_rejected(decoder::CausalDecoder& model, decoder::CausalDecoder& other) {
  const std::vector<int32_t> good{1, 2, 3};
  const std::vector<int32_t> out_of_vocabulary{1, static_cast<int32_t>(model.info().vocab_size)};
  const std::vector<int32_t> negative{-1};
  const std::vector<int32_t> empty;
  const std::vector<std::size_t> unordered{2, 1};
  const std::vector<std::size_t> past_end{3};
  const std::vector<int32_t> too_long(model.info().max_positions + 1, 1);
  const auto expect_rejected = [&](const memory::SequenceMemory* prefix, decoder::Branch branch) {
    EXPECT_THROW((void)model.forward(prefix, std::span(&branch, 1), false), std::invalid_argument);
  };
  expect_rejected(nullptr, {out_of_vocabulary, {}});
  expect_rejected(nullptr, {negative, {}});
  expect_rejected(nullptr, {empty, {}});
  expect_rejected(nullptr, {good, unordered});
  expect_rejected(nullptr, {good, past_end});
  expect_rejected(nullptr, {too_long, {}});
  const std::vector<int32_t> almost(model.info().max_positions - 2, 1);
  const auto prefix = model.run_prefix(almost);
  expect_rejected(prefix.get(), {good, {}});
  const auto foreign = other.run_prefix(good);
  expect_rejected(foreign.get(), {good, {}});
}

using test::ScratchDirectoryTest;

}  // namespace s1::parity
