// Gated DeltaNet ops: the chunked delta rule against the token-by-token recurrence (from zero and
// from a carried state, at chunk edges and off-grid starts), split runs against one run, and the
// conv / norms against direct float64 formulas.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

#include "backend/cpu/gated_delta.h"
#include "backend/cpu/reference/gated_delta.h"

namespace s1::backend::cpu {
namespace {

std::vector<float> random_values(std::size_t count, std::mt19937& rng, float scale = 1.0F) {
  std::normal_distribution<float> normal(0.0F, scale);
  std::vector<float> values(count);
  for (float& v : values) v = normal(rng);
  return values;
}

double max_abs_difference(std::span<const float> a, std::span<const float> b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]));
  return worst;
}

// Inputs with the statistics of the real layer: L2-normalised keys and queries (query scaled by
// 1/√k_dim), β in (0, 1), g = −exp(A)·softplus(·) ≤ 0.
struct DeltaProblem {
  GatedDeltaShape shape;
  std::size_t rows;
  std::vector<float> query, key, value, g, beta;

  DeltaProblem(GatedDeltaShape s, std::size_t n, unsigned seed) : shape(s), rows(n) {
    std::mt19937 rng(seed);
    const std::size_t qk = n * s.k_heads * s.k_dim;
    query = random_values(qk, rng);
    key = random_values(qk, rng);
    l2_norm_scaled(query, s.k_dim, 1e-6F, 1.0F / std::sqrt(static_cast<float>(s.k_dim)), query);
    l2_norm_scaled(key, s.k_dim, 1e-6F, 1.0F, key);
    value = random_values(n * s.v_heads * s.v_dim, rng);
    std::uniform_real_distribution<float> unit(0.0F, 1.0F);
    g.resize(n * s.v_heads);
    beta.resize(n * s.v_heads);
    for (float& x : g) x = -0.3F * unit(rng) - 0.001F;
    for (float& x : beta) x = unit(rng);
  }

  [[nodiscard]] GatedDeltaInputs rows_from(std::size_t begin, std::size_t count) const {
    const std::size_t qk = shape.k_heads * shape.k_dim;
    const std::size_t vv = shape.v_heads * shape.v_dim;
    return GatedDeltaInputs{
        .query = std::span<const float>(query).subspan(begin * qk, count * qk),
        .key = std::span<const float>(key).subspan(begin * qk, count * qk),
        .value = std::span<const float>(value).subspan(begin * vv, count * vv),
        .value_stride = vv,
        .g = std::span<const float>(g).subspan(begin * shape.v_heads, count * shape.v_heads),
        .beta = std::span<const float>(beta).subspan(begin * shape.v_heads, count * shape.v_heads),
        .rows = count,
    };
  }
  [[nodiscard]] GatedDeltaInputs all() const { return rows_from(0, rows); }
  [[nodiscard]] std::size_t state_size() const { return shape.v_heads * shape.k_dim * shape.v_dim; }
  [[nodiscard]] std::size_t out_size() const { return rows * shape.v_heads * shape.v_dim; }
};

constexpr double chunked_tolerance = 1e-5;

TEST(GatedDeltaRule, ChunkedEqualsRecurrentFromZeroState) {
  const GatedDeltaShape shape{.k_heads = 2, .v_heads = 4, .k_dim = 16, .v_dim = 12};
  for (const std::size_t rows : {1UL, 63UL, 64UL, 65UL, 200UL}) {
    const DeltaProblem problem(shape, rows, static_cast<unsigned>(rows));
    std::vector<float> chunked_state(problem.state_size(), 0.0F), recurrent_state(problem.state_size(), 0.0F);
    std::vector<float> chunked_out(problem.out_size()), recurrent_out(problem.out_size());
    gated_delta_rule(problem.all(), shape, 0, 64, chunked_state, chunked_out);
    reference::gated_delta_rule_recurrent(problem.all(), shape, recurrent_state, recurrent_out);
    EXPECT_LE(max_abs_difference(chunked_out, recurrent_out), chunked_tolerance) << rows << " rows";
    EXPECT_LE(max_abs_difference(chunked_state, recurrent_state), chunked_tolerance) << rows << " rows";
  }
}

TEST(GatedDeltaRule, ChunkedEqualsRecurrentAtRealHeadSizesAndStrongDecay) {
  // 128 × 128 heads as in every Qwen3.5 size; decays down to exp(−4) per token stress the
  // cumulative-decay factors the chunked form multiplies and divides.
  const GatedDeltaShape shape{.k_heads = 1, .v_heads = 2, .k_dim = 128, .v_dim = 128};
  DeltaProblem problem(shape, 130, 21);
  std::mt19937 rng(22);
  std::uniform_real_distribution<float> unit(0.0F, 1.0F);
  for (float& x : problem.g) x = -4.0F * unit(rng);
  std::vector<float> chunked_state(problem.state_size(), 0.0F), recurrent_state(problem.state_size(), 0.0F);
  std::vector<float> chunked_out(problem.out_size()), recurrent_out(problem.out_size());
  gated_delta_rule(problem.all(), shape, 0, 64, chunked_state, chunked_out);
  reference::gated_delta_rule_recurrent(problem.all(), shape, recurrent_state, recurrent_out);
  EXPECT_LE(max_abs_difference(chunked_out, recurrent_out), chunked_tolerance);
  EXPECT_LE(max_abs_difference(chunked_state, recurrent_state), chunked_tolerance);
}

TEST(GatedDeltaRule, ChunkedContinuesACarriedStateOffTheChunkGrid) {
  const GatedDeltaShape shape{.k_heads = 1, .v_heads = 3, .k_dim = 8, .v_dim = 8};
  const DeltaProblem problem(shape, 150, 7);
  std::vector<float> whole_state(problem.state_size(), 0.0F), whole_out(problem.out_size());
  reference::gated_delta_rule_recurrent(problem.all(), shape, whole_state, whole_out);
  for (const std::size_t split : {37UL, 64UL, 100UL}) {
    std::vector<float> state(problem.state_size(), 0.0F), out(problem.out_size());
    gated_delta_rule(problem.rows_from(0, split), shape, 0, 64, state, out);
    gated_delta_rule(problem.rows_from(split, problem.rows - split), shape, split, 64, state,
                     std::span<float>(out).subspan(split * shape.v_heads * shape.v_dim));
    EXPECT_LE(max_abs_difference(out, whole_out), chunked_tolerance) << "split at " << split;
    EXPECT_LE(max_abs_difference(state, whole_state), chunked_tolerance) << "split at " << split;
  }
}

TEST(GatedDeltaRule, BranchesReadASharedInitialStateWithoutChangingIt) {
  // Several continuations of one prefix state, each from the shared state (left as it was) into its
  // own: the same as continuing a private copy in place, for branch lengths on and off the chunk grid.
  const GatedDeltaShape shape{.k_heads = 2, .v_heads = 4, .k_dim = 8, .v_dim = 8};
  const DeltaProblem problem(shape, 100, 31);
  const std::size_t split = 37;
  std::vector<float> prefix_state(problem.state_size(), 1.0F), prefix_out(problem.out_size());
  gated_delta_rule(problem.rows_from(0, split), shape, 0, 64, {}, prefix_state, prefix_out);
  std::vector<float> zero_started(problem.state_size(), 0.0F), zero_out(problem.out_size());
  gated_delta_rule(problem.rows_from(0, split), shape, 0, 64, zero_started, zero_out);
  EXPECT_EQ(prefix_state, zero_started) << "an empty initial state is the zero state";
  const std::vector<float> shared = prefix_state;
  for (const std::size_t length : {1UL, 27UL, 63UL}) {
    std::vector<float> copy = shared, branch_state(problem.state_size(), -5.0F);
    std::vector<float> in_place_out(problem.out_size()), branch_out(problem.out_size());
    const GatedDeltaInputs rows = problem.rows_from(split, length);
    gated_delta_rule(rows, shape, split, 64, copy, in_place_out);
    gated_delta_rule(rows, shape, split, 64, prefix_state, branch_state, branch_out);
    EXPECT_EQ(branch_state, copy) << length << " rows";
    EXPECT_EQ(branch_out, in_place_out) << length << " rows";
    EXPECT_EQ(prefix_state, shared) << "the shared state changed after a branch of " << length << " rows";
  }
}

TEST(GatedDeltaRule, GroupedValueHeadsReadConsecutiveKeyHeads) {
  // Two value heads per key head: value head 1 must read key head 0, value head 2 key head 1.
  const GatedDeltaShape shape{.k_heads = 2, .v_heads = 4, .k_dim = 4, .v_dim = 4};
  DeltaProblem problem(shape, 5, 3);
  std::vector<float> state(problem.state_size(), 0.0F), out(problem.out_size());
  gated_delta_rule(problem.all(), shape, 0, 64, state, out);
  // Each value head alone, with its own key head as a one-head problem.
  for (std::size_t h = 0; h < shape.v_heads; ++h) {
    const GatedDeltaShape one{.k_heads = 1, .v_heads = 1, .k_dim = 4, .v_dim = 4};
    std::vector<float> q, k, v, g, beta;
    for (std::size_t t = 0; t < problem.rows; ++t) {
      const std::size_t kh = h / 2;
      q.insert(q.end(), problem.query.begin() + static_cast<std::ptrdiff_t>(t * 8 + kh * 4),
               problem.query.begin() + static_cast<std::ptrdiff_t>(t * 8 + kh * 4 + 4));
      k.insert(k.end(), problem.key.begin() + static_cast<std::ptrdiff_t>(t * 8 + kh * 4),
               problem.key.begin() + static_cast<std::ptrdiff_t>(t * 8 + kh * 4 + 4));
      v.insert(v.end(), problem.value.begin() + static_cast<std::ptrdiff_t>(t * 16 + h * 4),
               problem.value.begin() + static_cast<std::ptrdiff_t>(t * 16 + h * 4 + 4));
      g.push_back(problem.g[t * 4 + h]);
      beta.push_back(problem.beta[t * 4 + h]);
    }
    std::vector<float> one_state(16, 0.0F), one_out(problem.rows * 4);
    reference::gated_delta_rule_recurrent(
        GatedDeltaInputs{.query = q, .key = k, .value = v, .value_stride = 4, .g = g, .beta = beta,
                         .rows = problem.rows},
        one, one_state, one_out);
    for (std::size_t t = 0; t < problem.rows; ++t) {
      for (std::size_t c = 0; c < 4; ++c) {
        EXPECT_NEAR(out[t * 16 + h * 4 + c], one_out[t * 4 + c], chunked_tolerance) << "head " << h;
      }
    }
  }
}

TEST(CausalConv1dSilu, MatchesTheFormulaAndCarriesTheTail) {
  std::mt19937 rng(5);
  const std::size_t channels = 6, kernel = 4, rows = 9, stride = 10;
  const auto x = random_values(rows * stride, rng);
  const auto weight = random_values(channels * kernel, rng);
  const auto initial_tail = random_values((kernel - 1) * channels, rng);
  std::vector<float> tail = initial_tail;
  std::vector<float> y(rows * channels);
  causal_conv1d_silu(x, rows, stride, weight, kernel, tail, y);
  const auto padded = [&](std::ptrdiff_t s, std::size_t c) -> double {
    return s < 0 ? initial_tail[static_cast<std::size_t>(s + 3) * channels + c] : x[static_cast<std::size_t>(s) * stride + c];
  };
  for (std::size_t t = 0; t < rows; ++t) {
    for (std::size_t c = 0; c < channels; ++c) {
      double sum = 0.0;
      for (std::size_t j = 0; j < kernel; ++j) sum += weight[c * kernel + j] * padded(static_cast<std::ptrdiff_t>(t + j) - 3, c);
      EXPECT_NEAR(y[t * channels + c], sum / (1.0 + std::exp(-sum)), 1e-6);
    }
  }
  for (std::size_t i = 0; i < kernel - 1; ++i) {
    for (std::size_t c = 0; c < channels; ++c) EXPECT_EQ(tail[i * channels + c], x[(rows - 3 + i) * stride + c]);
  }

  // Row by row with the carried tail equals the whole run; a run shorter than the tail keeps part of it.
  std::vector<float> step_tail = initial_tail;
  std::vector<float> step_y(rows * channels);
  for (std::size_t t = 0; t < rows; ++t) {
    causal_conv1d_silu(std::span<const float>(x).subspan(t * stride, channels), 1, stride, weight, kernel, step_tail,
                       std::span<float>(step_y).subspan(t * channels, channels));
    if (t == 0) {
      for (std::size_t c = 0; c < channels; ++c) {
        EXPECT_EQ(step_tail[c], initial_tail[channels + c]);
        EXPECT_EQ(step_tail[2 * channels + c], x[c]);
      }
    }
  }
  EXPECT_EQ(step_y, y);
  EXPECT_EQ(step_tail, tail);
}

TEST(GatedRmsNorm, MatchesTheFormula) {
  std::mt19937 rng(9);
  const std::size_t width = 12, rows = 5;
  const auto x = random_values(rows * width, rng);
  const auto gate = random_values(rows * width, rng);
  const auto weight = random_values(width, rng);
  std::vector<float> y(rows * width);
  gated_rms_norm(x, gate, weight, 1e-6F, y);
  for (std::size_t r = 0; r < rows; ++r) {
    double squares = 0.0;
    for (std::size_t i = 0; i < width; ++i) squares += static_cast<double>(x[r * width + i]) * x[r * width + i];
    const double inverse = 1.0 / std::sqrt(squares / width + 1e-6);
    for (std::size_t i = 0; i < width; ++i) {
      const double z = gate[r * width + i];
      const double expected = x[r * width + i] * inverse * weight[i] * z / (1.0 + std::exp(-z));
      EXPECT_NEAR(y[r * width + i], expected, 1e-6 + 1e-6 * std::abs(expected));
    }
  }
}

TEST(L2NormScaled, MatchesTheFormula) {
  std::mt19937 rng(10);
  const std::size_t dim = 16;
  const auto x = random_values(3 * dim, rng);
  std::vector<float> y(x.size());
  l2_norm_scaled(x, dim, 1e-6F, 0.25F, y);
  for (std::size_t r = 0; r < 3; ++r) {
    double squares = 0.0;
    for (std::size_t i = 0; i < dim; ++i) squares += static_cast<double>(x[r * dim + i]) * x[r * dim + i];
    for (std::size_t i = 0; i < dim; ++i) {
      EXPECT_NEAR(y[r * dim + i], x[r * dim + i] / std::sqrt(squares + 1e-6) * 0.25, 1e-7);
    }
  }
}

}  // namespace
}  // namespace s1::backend::cpu
