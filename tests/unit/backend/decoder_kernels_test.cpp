// The causal-decoder ops (RMSNorm, RoPE, SiLU·up, cached grouped-query attention) through their public
// entry points, against naive float64 computations written out here from the formulas, at one and two
// threads. Tolerances are relative to the expected tensor's largest magnitude and declared up front.

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/cached_attention.h"
#include "backend/cpu/convert.h"
#include "backend/cpu/parallel.h"
#include "backend/cpu/reference/decoder.h"
#include "backend/cpu/rms_norm.h"
#include "backend/cpu/rope.h"
#include "backend/cpu/swiglu.h"
#include "backend/cpu/team.h"

namespace s1::backend::cpu {
namespace {

// fp32 storage of results computed in double: a few ulps.
constexpr double fp32_tolerance = 1e-6;
// RoPE angles are computed in fp32 (as Transformers does), so at position p the angle is off by up
// to ~p·2⁻²⁴ rad: ~1e-5 at the positions tested here.
constexpr double rope_tolerance = 3e-5;
// The AVX-512 variant accumulates Q·K and Σ p·V in fp32 over up to 200 terms (head_dim 64 here)
// and uses a ~1 ulp polynomial exp: a few 1e-6 of the largest output.
constexpr double attention_tolerance = 2e-5;

std::vector<float> random_values(std::size_t count, float scale, unsigned seed) {
  std::mt19937 generator(seed);
  std::normal_distribution<float> normal(0.0F, scale);
  std::vector<float> values(count);
  for (float& value : values) value = normal(generator);
  return values;
}

double relative_max_error(std::span<const float> got, std::span<const double> expected) {
  EXPECT_EQ(got.size(), expected.size());
  double worst = 0.0;
  double largest = 0.0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double error = std::fabs(got[i] - expected[i]);
    worst = std::isnan(error) ? INFINITY : std::max(worst, error);
    largest = std::max(largest, std::fabs(expected[i]));
  }
  return worst / std::max(largest, 1e-30);
}

class DecoderKernels : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    previous_ = thread_count();
    set_thread_count(GetParam());
  }
  void TearDown() override { set_thread_count(previous_); }

 private:
  int previous_ = 1;
};

TEST_P(DecoderKernels, RmsNormMatchesFormula) {
  for (const std::size_t width : {1UL, 7UL, 64UL, 1000UL}) {
    const std::size_t rows = 300;
    const auto x = random_values(rows * width, 3.0F, 1);
    const auto weight = random_values(width, 1.0F, 2);
    const float eps = 1e-6F;
    std::vector<double> expected(x.size());
    for (std::size_t r = 0; r < rows; ++r) {
      double squares = 0.0;
      for (std::size_t i = 0; i < width; ++i) squares += static_cast<double>(x[r * width + i]) * x[r * width + i];
      const double scale = 1.0 / std::sqrt(squares / static_cast<double>(width) + static_cast<double>(eps));
      for (std::size_t i = 0; i < width; ++i) expected[r * width + i] = x[r * width + i] * scale * weight[i];
    }
    std::vector<float> got(x.size());
    rms_norm(x, weight, eps, got);
    EXPECT_LE(relative_max_error(got, expected), fp32_tolerance) << "width " << width;
    std::vector<float> in_place = x;
    rms_norm(in_place, weight, eps, in_place);
    EXPECT_EQ(in_place, got) << "in place, width " << width;
  }
}

TEST_P(DecoderKernels, SiluMulMatchesFormula) {
  const auto gate = random_values(50000, 4.0F, 3);
  const auto up = random_values(50000, 2.0F, 4);
  std::vector<double> expected(gate.size());
  for (std::size_t i = 0; i < gate.size(); ++i)
    expected[i] = static_cast<double>(gate[i]) / (1.0 + std::exp(-static_cast<double>(gate[i]))) * up[i];
  std::vector<float> got(gate.size());
  silu_mul(gate, up, got);
  EXPECT_LE(relative_max_error(got, expected), fp32_tolerance);
}

TEST_P(DecoderKernels, SwigluIsSiluMulOfEachFusedRowsHalves) {
  // rows × [gate | up], at sizes below and above the split into threads.
  for (const auto& [rows, width] : {std::pair<std::size_t, std::size_t>{1, 24}, {3, 3072}, {40, 1000}}) {
    const auto fused = random_values(rows * 2 * width, 4.0F, 6);
    std::vector<float> expected(rows * width), got(rows * width);
    for (std::size_t r = 0; r < rows; ++r) {
      const std::span<const float> row = std::span<const float>(fused).subspan(2 * r * width, 2 * width);
      silu_mul(row.first(width), row.subspan(width), std::span<float>(expected).subspan(r * width, width));
    }
    swiglu(fused, width, got);
    EXPECT_EQ(got, expected) << "rows " << rows << " width " << width;
  }
}

struct RopeCase {
  std::size_t heads, head_dim, rotary_dim, row_stride;
  float theta;
};

TEST_P(DecoderKernels, RopeRotatesPairsAndLeavesTheRestAlone) {
  // row_stride > heads·head_dim: rotating the q heads in place inside a fused QKV row.
  for (const RopeCase c : {RopeCase{4, 16, 16, 64, 10000.0F}, RopeCase{3, 10, 10, 50, 1000000.0F},
                           RopeCase{2, 12, 6, 30, 10000.0F}, RopeCase{5, 9, 4, 45, 500.0F}}) {
    const std::size_t rows = 140;
    std::vector<int64_t> positions(rows);
    for (std::size_t r = 0; r < rows; ++r) positions[r] = static_cast<int64_t>((r * 37) % 200);
    const auto x = random_values(rows * c.row_stride, 1.0F, 5);
    std::vector<double> expected(x.begin(), x.end());
    const std::size_t half = c.rotary_dim / 2;
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t h = 0; h < c.heads; ++h)
        for (std::size_t j = 0; j < half; ++j) {
          const std::size_t base = r * c.row_stride + h * c.head_dim;
          const double angle =
              static_cast<double>(positions[r]) *
              std::pow(static_cast<double>(c.theta), -2.0 * static_cast<double>(j) / static_cast<double>(c.rotary_dim));
          const double first = x[base + j];
          const double second = x[base + j + half];
          expected[base + j] = first * std::cos(angle) - second * std::sin(angle);
          expected[base + j + half] = second * std::cos(angle) + first * std::sin(angle);
        }
    std::vector<float> got = x;
    apply_rope(got, rows, c.row_stride, c.heads, c.head_dim, c.rotary_dim, positions, c.theta);
    const std::string label = "heads " + std::to_string(c.heads) + " head_dim " + std::to_string(c.head_dim) +
                              " rotary_dim " + std::to_string(c.rotary_dim);
    EXPECT_LE(relative_max_error(got, expected), rope_tolerance) << label;
    // Values past rotary_dim in each head, and past the heads in each row, are bit-identical.
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t i = 0; i < c.row_stride; ++i) {
        const std::size_t head = i / c.head_dim;
        if (head < c.heads && i % c.head_dim < c.rotary_dim) continue;
        ASSERT_EQ(got[r * c.row_stride + i], x[r * c.row_stride + i]) << label << " row " << r << " value " << i;
      }
  }
}

TEST(DecoderKernelsRope, TableMatchesPerRowAnglesBitForBit) {
  // ModernBERT's shape: q and k heads of a fused QKV row, packed sequences repeating positions.
  const std::size_t rows = 300, heads = 8, head_dim = 64, row_stride = 3 * heads / 2 * head_dim;
  std::vector<int64_t> positions(rows);
  for (std::size_t r = 0; r < rows; ++r) positions[r] = static_cast<int64_t>(r % 130);
  for (const float theta : {10000.0F, 160000.0F}) {
    const auto x = random_values(rows * row_stride, 1.0F, 7);
    std::vector<float> expected = x, got = x;
    apply_rope(expected, rows, row_stride, heads, head_dim, head_dim, positions, theta);
    const RopeTable table = rope_table(head_dim, theta, 130);
    reference::apply_rope(got, rows, row_stride, heads, head_dim, head_dim / 2, table.cosines, table.sines, positions);
    EXPECT_EQ(got, expected) << "theta " << theta;
  }
}

TEST(DecoderKernelsRope, MropeWithEqualAxesIsRopeAndEachFrequencyReadsItsAxis) {
  // Qwen3.5's partial rotary: 16 of 32 dims per head, a fused row of 3 heads, 8 frequencies.
  const std::size_t rows = 70, heads = 3, head_dim = 32, rotary = 16, row_stride = 100;
  const std::vector<uint8_t> axes{0, 1, 2, 0, 1, 2, 0, 1};
  std::vector<int64_t> positions(rows), equal(3 * rows), mixed(3 * rows);
  for (std::size_t r = 0; r < rows; ++r) {
    positions[r] = static_cast<int64_t>(r + 5);
    for (std::size_t axis = 0; axis < 3; ++axis) {
      equal[axis * rows + r] = positions[r];
      mixed[axis * rows + r] = static_cast<int64_t>((r * (axis + 3)) % 41);
    }
  }
  const auto x = random_values(rows * row_stride, 1.0F, 9);
  std::vector<float> expected = x, got = x;
  apply_rope(expected, rows, row_stride, heads, head_dim, rotary, positions, 10000.0F);
  apply_mrope(got, rows, row_stride, heads, head_dim, rotary, axes, equal, 10000.0F);
  EXPECT_EQ(got, expected);

  // Frequency j of a row rotates as 1-D RoPE at that row's axes[j] position rotates it.
  got = x;
  apply_mrope(got, rows, row_stride, heads, head_dim, rotary, axes, mixed, 10000.0F);
  for (std::size_t axis = 0; axis < 3; ++axis) {
    std::vector<float> one = x;
    apply_rope(one, rows, row_stride, heads, head_dim, rotary, std::span(mixed).subspan(axis * rows, rows), 10000.0F);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t h = 0; h < heads; ++h)
        for (std::size_t j = 0; j < rotary / 2; ++j) {
          if (axes[j] != axis) continue;
          for (const std::size_t d : {j, j + rotary / 2}) {
            const std::size_t i = r * row_stride + h * head_dim + d;
            ASSERT_EQ(got[i], one[i]) << "row " << r << " frequency " << j;
          }
        }
  }
  // Values past the heads' rotary dims and past the heads are untouched.
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t d = rotary; d < head_dim; ++d) EXPECT_EQ(got[r * row_stride + d], x[r * row_stride + d]);
    for (std::size_t d = heads * head_dim; d < row_stride; ++d) EXPECT_EQ(got[r * row_stride + d], x[r * row_stride + d]);
  }
}

TEST(DecoderKernelsRope, PositionZeroIsIdentity) {
  auto x = random_values(32, 1.0F, 6);
  const auto original = x;
  const std::vector<int64_t> positions{0};
  apply_rope(x, 1, 32, 2, 16, 16, positions, 10000.0F);
  EXPECT_EQ(x, original);
}

struct AttentionCase {
  std::size_t heads, kv_heads, head_dim, m, n, first_query_position;
  bool causal;
};

std::string describe(const AttentionCase& c) {
  return "heads " + std::to_string(c.heads) + " kv_heads " + std::to_string(c.kv_heads) + " head_dim " +
         std::to_string(c.head_dim) + " m " + std::to_string(c.m) + " n " + std::to_string(c.n) + " first " +
         std::to_string(c.first_query_position) + (c.causal ? " causal" : " full");
}

TEST_P(DecoderKernels, CachedAttentionMatchesNaiveGroupedQueryAttention) {
  const std::vector<AttentionCase> cases{
      {4, 4, 16, 9, 9, 0, true},       // prefill, GQA ratio 1
      {4, 2, 16, 9, 9, 0, true},       // GQA ratio 2
      {8, 2, 8, 33, 33, 0, true},      // GQA ratio 4
      {4, 1, 7, 5, 40, 35, true},      // a branch after a 35-token prefix, odd head_dim, MQA
      {6, 3, 11, 3, 70, 50, true},     // m < n with keys past the last query (the branch is not last)
      {4, 2, 16, 12, 20, 0, false},    // non-causal: every query sees all n keys
      {2, 1, 13, 1, 130, 129, true},   // one decode step
      {4, 4, 64, 70, 70, 0, true},     // enough work to split across threads
      {2, 1, 16, 150, 200, 50, true},  // more query rows than one work item (64) takes
  };
  for (const AttentionCase& c : cases) {
    const std::size_t q_width = c.heads * c.head_dim;
    const std::size_t kv_width = c.kv_heads * c.head_dim;
    const std::size_t q_stride = q_width + 2 * kv_width;  // queries read in place from a fused QKV row
    const auto q = random_values(c.m * q_stride, 1.0F, 7);
    const auto keys = random_values(c.n * kv_width, 1.0F, 8);
    const auto values = random_values(c.n * kv_width, 1.0F, 9);
    const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
    std::vector<double> expected(c.m * q_width);
    for (std::size_t i = 0; i < c.m; ++i)
      for (std::size_t h = 0; h < c.heads; ++h) {
        const std::size_t g = h * c.kv_heads / c.heads;  // repeat_kv: kv head g serves heads g·ratio…
        const std::size_t visible = c.causal ? c.first_query_position + i + 1 : c.n;
        std::vector<double> weights(visible);
        double largest = -INFINITY;
        for (std::size_t j = 0; j < visible; ++j) {
          double dot = 0.0;
          for (std::size_t d = 0; d < c.head_dim; ++d)
            dot += static_cast<double>(q[i * q_stride + h * c.head_dim + d]) * keys[j * kv_width + g * c.head_dim + d];
          weights[j] = dot * scale;
          largest = std::max(largest, weights[j]);
        }
        double sum = 0.0;
        for (double& weight : weights) sum += (weight = std::exp(weight - largest));
        for (std::size_t d = 0; d < c.head_dim; ++d) {
          double value = 0.0;
          for (std::size_t j = 0; j < visible; ++j) value += weights[j] * values[j * kv_width + g * c.head_dim + d];
          expected[i * q_width + h * c.head_dim + d] = value / sum;
        }
      }
    const CachedAttentionShape shape{c.heads, c.kv_heads, c.head_dim, static_cast<float>(scale)};
    std::vector<float> got(c.m * q_width);
    cached_attention(q, q_stride, c.m, keys, values, c.n, c.first_query_position, c.causal, shape, got);
    EXPECT_LE(relative_max_error(got, expected), attention_tolerance) << describe(c);
  }
}

// bf16 products (AMX tiles) against the fp32 kernel: operands keep 8 significant bits, so outputs
// move by a few 1e-3 of the largest (measured worst over these cases: 5.8e-3, 200 prefix keys). A
// branch seeing another's keys, or missing the prefix, is off by the order of the outputs.
constexpr double bf16_attention_tolerance = 2e-2;

TEST_P(DecoderKernels, CachedAttentionBranchesEqualEachBranchAlone) {
  struct Case {
    std::size_t heads, kv_heads, head_dim, prefix;
    bool causal;
  };
  // Head sizes on the AMX tiles (multiples of 32) and off them, with and without a prefix, a
  // noncausal pass from the empty sequence; branches of one token, under and over a tile and a
  // work item (64 rows).
  const Case cases[] = {{4, 2, 32, 37, true}, {8, 2, 64, 200, true}, {4, 4, 16, 50, true},
                        {2, 1, 32, 0, true},  {4, 2, 32, 0, false},  {4, 1, 64, 1, true}};
  const std::vector<std::size_t> lengths = {1, 40, 3, 70, 16};
  for (const Case& c : cases) {
    const std::size_t q_width = c.heads * c.head_dim;
    const std::size_t kv_width = c.kv_heads * c.head_dim;
    const std::size_t stride = q_width + 2 * kv_width;  // branch rows as a fused QKV projection
    std::vector<AttentionBranch> branches;
    std::size_t total = 0;
    for (const std::size_t length : lengths) {
      branches.push_back({total, length});
      total += length;
    }
    const auto qkv = random_values(total * stride, 1.0F, 11);
    const auto prefix_keys = random_values(c.prefix * kv_width, 1.0F, 12);
    const auto prefix_values = random_values(c.prefix * kv_width, 1.0F, 13);
    const float scale = 1.0F / std::sqrt(static_cast<float>(c.head_dim));
    // Expected: each branch alone over [prefix | its rows] through cached_attention in fp32.
    std::vector<double> expected(total * q_width);
    for (const AttentionBranch& branch : branches) {
      std::vector<float> keys(prefix_keys), values(prefix_values);
      for (std::size_t t = 0; t < branch.length; ++t) {
        const float* row = qkv.data() + (branch.offset + t) * stride;
        keys.insert(keys.end(), row + q_width, row + q_width + kv_width);
        values.insert(values.end(), row + q_width + kv_width, row + stride);
      }
      std::vector<float> alone(branch.length * q_width);
      cached_attention(std::span<const float>(qkv).subspan(branch.offset * stride), stride, branch.length, keys, values,
                       c.prefix + branch.length, c.prefix, c.causal,
                       {c.heads, c.kv_heads, c.head_dim, scale, Precision::fp32}, alone);
      std::copy(alone.begin(), alone.end(), expected.begin() + static_cast<std::ptrdiff_t>(branch.offset * q_width));
    }
    for (const Precision precision : {Precision::fp32, Precision::bf16}) {
      std::vector<float> got(total * q_width, NAN);
      cached_attention_branches(qkv, stride, prefix_keys, prefix_values, c.prefix,
                                std::span<const float>(qkv).subspan(q_width), std::span<const float>(qkv).subspan(q_width + kv_width),
                                stride, branches, c.causal, {c.heads, c.kv_heads, c.head_dim, scale, precision}, got);
      const std::string what = "heads " + std::to_string(c.heads) + " kv_heads " + std::to_string(c.kv_heads) +
                               " head_dim " + std::to_string(c.head_dim) + " prefix " + std::to_string(c.prefix) +
                               (c.causal ? " causal" : " full") + (precision == Precision::bf16 ? " bf16" : " fp32");
      if (precision == Precision::fp32) {
        EXPECT_LE(relative_max_error(got, expected), fp32_tolerance) << what;
      } else {
        EXPECT_LE(relative_max_error(got, expected), bf16_attention_tolerance) << what;
      }
    }
  }
}

// The bf16-output form and the forms inside a backend::cpu::Team make the same computation: bit for bit
// the fp32 form's result (rounded to bf16 for the bf16 output), on and off the tiles, with a prefix
// and without, a team of this test's thread count.
TEST_P(DecoderKernels, CachedAttentionBranchesInATeamOrInBf16AreTheFp32FormsBits) {
  struct Case {
    std::size_t heads, kv_heads, head_dim, prefix;
    bool causal;
  };
  const Case cases[] = {{4, 2, 32, 37, true}, {8, 2, 64, 200, true}, {4, 4, 16, 50, true},
                        {2, 1, 32, 0, true},  {4, 2, 32, 0, false},  {8, 4, 128, 0, true}};
  const std::vector<std::size_t> lengths = {1, 40, 3, 130, 16};
  for (const Case& c : cases) {
    const std::size_t q_width = c.heads * c.head_dim;
    const std::size_t kv_width = c.kv_heads * c.head_dim;
    const std::size_t stride = q_width + 2 * kv_width;
    std::vector<AttentionBranch> branches;
    std::size_t total = 0;
    for (const std::size_t length : lengths) {
      branches.push_back({total, length});
      total += length;
    }
    const auto qkv = random_values(total * stride, 1.0F, 21);
    const auto prefix_keys = random_values(c.prefix * kv_width, 1.0F, 22);
    const auto prefix_values = random_values(c.prefix * kv_width, 1.0F, 23);
    for (const Precision precision : {Precision::fp32, Precision::bf16}) {
      const CachedAttentionBranches attention{
          .q = qkv,
          .q_stride = stride,
          .prefix_keys = prefix_keys,
          .prefix_values = prefix_values,
          .prefix_length = c.prefix,
          .keys = std::span<const float>(qkv).subspan(q_width),
          .values = std::span<const float>(qkv).subspan(q_width + kv_width),
          .kv_stride = stride,
          .branches = branches,
          .causal = c.causal,
          .shape = {c.heads, c.kv_heads, c.head_dim, 1.0F / std::sqrt(static_cast<float>(c.head_dim)), precision}};
      std::vector<float> fp32(total * q_width, NAN);
      cached_attention_branches(attention.q, stride, prefix_keys, prefix_values, c.prefix, attention.keys,
                                attention.values, stride, branches, c.causal, attention.shape, fp32);
      std::vector<Bf16Bits> rounded(fp32.size());
      convert_fp32_to_bf16(fp32, rounded);

      std::vector<Bf16Bits> bf16(fp32.size(), 0xFFFF);
      cached_attention_branches(attention, bf16);
      std::vector<float> team_fp32(fp32.size(), NAN);
      std::vector<Bf16Bits> team_bf16(fp32.size(), 0xFFFF);
      CachedAttentionWorkspace workspace;
      run_team([&](Team& team) {
        cached_attention_branches(team, workspace, attention, team_fp32);
        cached_attention_branches(team, workspace, attention, team_bf16);
      });
      const std::string what = "heads " + std::to_string(c.heads) + " head_dim " + std::to_string(c.head_dim) +
                               " prefix " + std::to_string(c.prefix) + (c.causal ? " causal" : " full") +
                               (precision == Precision::bf16 ? " bf16" : " fp32");
      EXPECT_EQ(bf16, rounded) << what;
      EXPECT_EQ(team_bf16, rounded) << what;
      EXPECT_TRUE(std::equal(fp32.begin(), fp32.end(), team_fp32.begin(),
                             [](float a, float b) { return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b); }))
          << what;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ThreadCounts, DecoderKernels, ::testing::Values(1, 2));

}  // namespace
}  // namespace s1::backend::cpu
