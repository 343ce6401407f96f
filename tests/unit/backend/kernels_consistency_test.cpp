// The CPU backend's variant-level checks: every variant of the kernels below the seam, and each
// public op entry point, against the scalar reference on random shapes. The ops of backend.h are
// also covered through the seam, on every CPU class, by ops_test.cpp, which replaces the variant
// tests of RMSNorm, LayerNorm, softmax and SiLU·up that used to live here. Tolerances are declared
// per precision before comparing; variants the CPU cannot run are skipped with a message.

#include <gtest/gtest.h>
#include <xmmintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "backend/cpu/attention.h"
#include "backend/cpu/convert.h"
#include "backend/cpu/gated_delta.h"
#include "backend/cpu/gelu.h"
#include "backend/cpu/layer_norm.h"
#include "backend/cpu/linear.h"
#include "backend/cpu/parallel.h"
#include "backend/cpu/pooling.h"
#include "backend/cpu/reference/decoder.h"
#include "backend/cpu/reference/gated_delta.h"
#include "backend/cpu/reference/reference.h"
#include "backend/cpu/rms_norm.h"
#include "backend/cpu/rope.h"
#include "backend/cpu/softmax.h"
#include "backend/cpu/swiglu.h"
#include "backend/cpu/variants.h"

namespace s1::backend::cpu {
namespace {

// Largest |got − expected| allowed, relative to the RMS of the expected tensor (so tiny outputs of
// a large tensor are judged against the tensor's scale, like ggml's normalised error).
constexpr double fp32_tolerance = 2e-5;
// bf16 keeps 8 significant bits: rounding both operands gives ~3e-3 relative error per product,
// and the worst of thousands of outputs sits a few standard deviations out (measured worst: 1.6e-2
// for linear, 2.4e-2 for attention, whose bf16 Q·K perturbs the softmax logits).
constexpr double bf16_tolerance = 5e-2;

std::vector<float> random_values(std::size_t count, float scale, unsigned seed) {
  std::mt19937 generator(seed);
  std::normal_distribution<float> normal(0.0F, scale);
  std::vector<float> values(count);
  for (float& value : values) value = normal(generator);
  return values;
}

double root_mean_square(std::span<const float> values) {
  double squares = 0.0;
  for (const float value : values) squares += static_cast<double>(value) * value;
  return std::sqrt(squares / static_cast<double>(std::max<std::size_t>(values.size(), 1)));
}

// scale 0 means "the RMS of expected".
double normalised_max_error(std::span<const float> got, std::span<const float> expected, double scale) {
  EXPECT_EQ(got.size(), expected.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double error = std::fabs(static_cast<double>(got[i]) - expected[i]);
    worst = std::isnan(error) ? std::numeric_limits<double>::infinity() : std::max(worst, error);
  }
  return worst / std::max(scale > 0.0 ? scale : root_mean_square(expected), 1e-30);
}

void expect_close(std::span<const float> got, std::span<const float> expected, double tolerance,
                  const std::string& what, double scale = 0.0) {
  const double error = normalised_max_error(got, expected, scale);
  EXPECT_LE(error, tolerance) << what;
}

// Attention outputs are weighted means of value rows, so their RMS shrinks with the number of keys
// averaged while rounding errors scale with the values: judge them against the inputs' RMS.
double attention_scale(std::span<const float> qkv) { return root_mean_square(qkv); }

template <class Fn>
bool runnable(const Variant<Fn>& variant) {
  if (isa_supported(variant.isa)) return true;
  std::printf("[  SKIPPED ] variant %s needs %s, which this CPU lacks\n", std::string(variant.name).c_str(),
              std::string(isa_name(variant.isa)).c_str());
  return false;
}

// Runs each public op on 1 and 2 threads, so the row/head splitting is covered too.
class ThreadCounts : public ::testing::Test {
 protected:
  void TearDown() override { set_thread_count(saved_); }
  int saved_ = thread_count();
};

TEST(KernelsConsistency, GeluVariants) {
  unsigned seed = 100;
  for (const auto& variant : op_variants().gelu) {
    if (!runnable(variant)) continue;
    for (const std::size_t size : {1UL, 15UL, 16UL, 17UL, 1000UL, 4099UL}) {
      auto x = random_values(size, 3.0F, ++seed);
      if (size > 4) {
        x[0] = -12.0F;  // deep negative tail
        x[1] = 12.0F;
        x[2] = 0.0F;
        x[3] = -1e-7F;
      }
      std::vector<float> expected(size), got(size);
      reference::gelu(x, expected);
      variant.run(x, got);
      expect_close(got, expected, fp32_tolerance,
                   std::string(variant.name) + " size " + std::to_string(size));
    }
  }
}

TEST(KernelsConsistency, ConvertFp32ToBf16Variants) {
  unsigned seed = 300;
  for (const auto& variant : op_variants().convert_fp32_to_bf16) {
    if (!runnable(variant)) continue;
    for (const std::size_t size : {1UL, 16UL, 31UL, 32UL, 33UL, 1000UL}) {
      auto x = random_values(size, 100.0F, ++seed);
      if (size > 3) {
        x[0] = std::numeric_limits<float>::infinity();
        x[1] = -std::numeric_limits<float>::infinity();
        x[2] = 1.00390625F;  // exactly halfway between two bf16 values: ties to even
      }
      std::vector<Bf16Bits> expected(size), got(size);
      reference::convert_fp32_to_bf16(x, expected);
      variant.run(x, got);
      EXPECT_EQ(got, expected) << variant.name << " size " << size;  // rounding is exact, not approximate
    }
  }
}

// bf16 values widened to fp32 (exact): what an op reading bf16 must treat them as.
std::vector<float> widened(std::span<const Bf16Bits> bits) {
  std::vector<float> values(bits.size());
  std::transform(bits.begin(), bits.end(), values.begin(), bf16_to_fp32);
  return values;
}

// Inputs of a gelu_mul test: random x and gate of `size` values, and from 5 values on x at erf's
// saturation (gelu must be 0 there, not NaN), at 0 and just below it.
std::pair<std::vector<float>, std::vector<float>> gelu_mul_inputs(std::size_t size, unsigned& seed) {
  auto x = random_values(size, 4.0F, ++seed);
  auto gate = random_values(size, 2.0F, ++seed);
  if (size > 4) {
    x[0] = -30.0F;
    x[1] = 30.0F;
    x[2] = 0.0F;
    x[3] = -1e-7F;
  }
  return {std::move(x), std::move(gate)};
}

TEST(KernelsConsistency, GeluMulBf16Variants) {
  unsigned seed = 440;
  for (const auto& variant : op_variants().gelu_mul_bf16) {
    if (!runnable(variant)) continue;
    for (const std::size_t size : {1UL, 15UL, 16UL, 17UL, 1000UL, 4099UL}) {
      const auto [x, gate] = gelu_mul_inputs(size, seed);
      std::vector<Bf16Bits> x_bits(size), gate_bits(size);
      reference::convert_fp32_to_bf16(x, x_bits);
      reference::convert_fp32_to_bf16(gate, gate_bits);
      // The fp32 op on the widened values is the definition.
      const auto x_widened = widened(x_bits);
      const auto gate_widened = widened(gate_bits);
      std::vector<float> expected(size), got(size);
      reference::gelu_mul(x_widened, gate_widened, expected);
      variant.run(x_bits, gate_bits, got);
      expect_close(got, expected, fp32_tolerance, std::string(variant.name) + " size " + std::to_string(size),
                   root_mean_square(x) * root_mean_square(gate));
    }
  }
}

// An independent naive attention over the public layout, to check the dispatch's head/GQA mapping.
std::vector<float> naive_attention(std::span<const float> qkv, std::span<const std::size_t> lengths,
                                   const AttentionShape& shape, bool causal) {
  const auto sees = [&](std::size_t i, std::size_t j) {
    return shape.window == 0 || (i > j ? i - j : j - i) <= shape.window;
  };
  std::vector<float> out(shape.batch * shape.seq * shape.out_width(), 0.0F);
  const std::size_t d = shape.head_dim;
  const std::size_t group = shape.heads / shape.kv_heads;
  for (std::size_t b = 0; b < shape.batch; ++b)
    for (std::size_t h = 0; h < shape.heads; ++h)
      for (std::size_t i = 0; i < lengths[b]; ++i) {
        const std::size_t visible = causal ? i + 1 : lengths[b];
        std::vector<double> weights(visible);
        double largest = -1e300;
        for (std::size_t j = 0; j < visible; ++j) {
          if (!sees(i, j)) {
            weights[j] = -1e300;
            continue;
          }
          double dot = 0.0;
          for (std::size_t c = 0; c < d; ++c)
            dot += static_cast<double>(qkv[(b * shape.seq + i) * shape.qkv_width() + h * d + c]) *
                   qkv[(b * shape.seq + j) * shape.qkv_width() + (shape.heads + h / group) * d + c];
          weights[j] = dot / std::sqrt(static_cast<double>(d));
          largest = std::max(largest, weights[j]);
        }
        double sum = 0.0;
        for (double& w : weights) sum += (w = w == -1e300 ? 0.0 : std::exp(w - largest));
        for (std::size_t c = 0; c < d; ++c) {
          double value = 0.0;
          for (std::size_t j = 0; j < visible; ++j)
            value += weights[j] * qkv[(b * shape.seq + j) * shape.qkv_width() +
                                      (shape.heads + shape.kv_heads + h / group) * d + c];
          out[(b * shape.seq + i) * shape.out_width() + h * d + c] = static_cast<float>(value / sum);
        }
      }
  return out;
}

TEST(KernelsConsistency, AttentionHeadVariants) {
  unsigned seed = 400;
  struct Case {
    std::size_t seq, length, head_dim;
  };
  const Case cases[] = {{1, 1, 32},     {5, 5, 32},     {16, 16, 32}, {17, 11, 32},
                        {128, 128, 32}, {200, 137, 32}, {33, 33, 8},  {40, 29, 40},
                        {64, 64, 64},   {100, 97, 128}, {9, 0, 32},   {256, 256, 32},
                        {300, 290, 64}};
  for (const auto& variant : op_variants().attention_head) {
    if (!runnable(variant)) continue;
    for (const Case& c : cases) {
      const RopeTable rope = rope_table(c.head_dim, 10000.0F, std::max<std::size_t>(c.seq, 1));
      for (const auto& [causal, window, fused_rope] :
           {std::tuple<bool, std::size_t, bool>{false, 0, false}, {true, 0, false}, {false, 3, false},
            {false, 20, false}, {false, 64, false}, {true, 5, false}, {false, 0, true}, {false, 64, true}}) {
        // One head laid out inside a wider fused row, as the dispatcher passes it.
        const std::size_t stride = 3 * c.head_dim + 5;
        const auto qkv = random_values(c.seq * stride, 1.5F, ++seed);
        const std::size_t out_stride = c.head_dim + 3;
        std::vector<float> expected(c.seq * out_stride, 7.0F), got(c.seq * out_stride, 7.0F);
        AttentionHeadTask task{.q = qkv.data(),
                               .k = qkv.data() + c.head_dim,
                               .v = qkv.data() + 2 * c.head_dim,
                               .qkv_stride = stride,
                               .out = nullptr,
                               .out_stride = out_stride,
                               .seq = c.seq,
                               .length = c.length,
                               .head_dim = c.head_dim,
                               .causal = causal,
                               .scale = 1.0F / std::sqrt(static_cast<float>(c.head_dim)),
                               .window = window,
                               .rope_cosines = fused_rope ? rope.cosines.data() : nullptr,
                               .rope_sines = fused_rope ? rope.sines.data() : nullptr};
        task.out = expected.data();
        reference::attention_head(task);
        task.out = got.data();
        variant.run(task);
        expect_close(got, expected, variant.bf16_arithmetic ? bf16_tolerance : fp32_tolerance,
                     std::string(variant.name) + " seq " + std::to_string(c.seq) + " length " +
                         std::to_string(c.length) + " head_dim " + std::to_string(c.head_dim) +
                         (causal ? " causal" : "") + " window " + std::to_string(window) +
                         (fused_rope ? " rope" : ""),
                     attention_scale(qkv));
        // Query rows in two ranges (two Team threads' shares) give the same rows as one call, and the
        // bf16 output is exactly those rows rounded. Up to 200 rows: the longer cases add nothing here
        // but minutes of the scalar reference under the sanitizers.
        if (c.seq > 200) continue;
        const std::size_t split = c.seq * 2 / 5;
        std::vector<float> by_ranges(got.size(), 7.0F);
        std::vector<Bf16Bits> by_ranges_bf16(got.size(), Bf16Bits{0x40e0});  // 7.0
        for (const auto& [begin, end] : {std::pair{std::size_t{0}, split}, std::pair{split, c.seq + 4}}) {
          task.query_begin = begin;
          task.query_end = end;
          task.out = by_ranges.data();
          variant.run(task);
          task.out = nullptr;
          task.out_bf16 = by_ranges_bf16.data();
          variant.run(task);
          task.out_bf16 = nullptr;
        }
        task.query_begin = 0;
        task.query_end = static_cast<std::size_t>(-1);
        expect_close(by_ranges, got, fp32_tolerance,
                     std::string(variant.name) + " query ranges seq " + std::to_string(c.seq), attention_scale(qkv));
        std::vector<Bf16Bits> rounded(by_ranges.size());
        reference::convert_fp32_to_bf16(by_ranges, rounded);
        EXPECT_EQ(by_ranges_bf16, rounded) << variant.name << " bf16 output seq " << c.seq;
        // bf16 inputs give exactly what the same values widened to fp32 give.
        std::vector<Bf16Bits> qkv_bf16(qkv.size());
        reference::convert_fp32_to_bf16(qkv, qkv_bf16);
        const auto qkv_rounded = widened(qkv_bf16);
        AttentionHeadTask rounded_task = task;
        rounded_task.q = qkv_rounded.data();
        rounded_task.k = qkv_rounded.data() + c.head_dim;
        rounded_task.v = qkv_rounded.data() + 2 * c.head_dim;
        std::vector<float> from_rounded(got.size(), 7.0F), from_bf16(got.size(), 7.0F);
        rounded_task.out = from_rounded.data();
        variant.run(rounded_task);
        AttentionHeadTask bf16_task = task;
        bf16_task.q = bf16_task.k = bf16_task.v = nullptr;
        bf16_task.q_bf16 = qkv_bf16.data();
        bf16_task.k_bf16 = qkv_bf16.data() + c.head_dim;
        bf16_task.v_bf16 = qkv_bf16.data() + 2 * c.head_dim;
        bf16_task.out = from_bf16.data();
        variant.run(bf16_task);
        EXPECT_EQ(from_bf16, from_rounded) << variant.name << " bf16 inputs seq " << c.seq << " length " << c.length
                                           << " head_dim " << c.head_dim << (fused_rope ? " rope" : "");
      }
    }
  }
}

// A head is unaffected by the heads its thread ran before: a longer head of NaNs leaves the scratch
// buffers full of NaN, and the padding of the next head's keys and values must not read them (a zero
// weight times a NaN value is NaN).
TEST(KernelsConsistency, AttentionHeadIgnoresEarlierHeads) {
  const std::size_t head_dim = 32, stride = 3 * head_dim;
  for (const auto& variant : op_variants().attention_head) {
    if (!runnable(variant)) continue;
    for (const std::size_t length : {std::size_t{11}, std::size_t{17}, std::size_t{40}}) {
      const auto qkv = random_values(length * stride, 1.5F, 990 + static_cast<unsigned>(length));
      AttentionHeadTask task{.q = qkv.data(),
                             .k = qkv.data() + head_dim,
                             .v = qkv.data() + 2 * head_dim,
                             .qkv_stride = stride,
                             .out_stride = head_dim,
                             .seq = length,
                             .length = length,
                             .head_dim = head_dim,
                             .scale = 0.125F};
      std::vector<float> fresh(length * head_dim), after_nan(length * head_dim);
      task.out = fresh.data();
      variant.run(task);
      const std::size_t nan_rows = 100;
      const std::vector<float> nans(nan_rows * stride, std::numeric_limits<float>::quiet_NaN());
      std::vector<float> sink(nan_rows * head_dim);
      AttentionHeadTask nan_task = task;
      nan_task.q = nans.data();
      nan_task.k = nans.data() + head_dim;
      nan_task.v = nans.data() + 2 * head_dim;
      nan_task.seq = nan_task.length = nan_rows;
      nan_task.out = sink.data();
      variant.run(nan_task);
      task.out = after_nan.data();
      variant.run(task);
      EXPECT_EQ(after_nan, fresh) << variant.name << " length " << length;
    }
  }
}

// packed_attention_rows over two row ranges is packed_attention, its bf16 output those rows rounded.
TEST(KernelsConsistency, PackedAttentionRowsMatchPackedAttention) {
  const std::vector<PackedSequence> layout{{0, 37}, {37, 128}, {165, 5}, {170, 37}};
  const std::size_t rows = 224, heads = 3, head_dim = 32, width = heads * head_dim;
  const auto qkv = random_values(rows * 3 * width, 1.5F, 710);
  for (const Precision precision : {Precision::fp32, Precision::bf16}) {
    for (const std::size_t half_window : {0UL, 16UL}) {
      std::vector<float> expected(rows * width, 7.0F), got(rows * width, 7.0F);
      std::vector<Bf16Bits> got_bf16(rows * width, Bf16Bits{0x40e0});
      packed_attention(layout, qkv, heads, head_dim, half_window, expected, precision);
      for (const auto& [begin, end] : {std::pair{0UL, 80UL}, std::pair{80UL, 168UL}, std::pair{168UL, rows}}) {
        packed_attention_rows(layout, qkv, heads, head_dim, half_window, begin, end, std::span<float>(got), precision);
        packed_attention_rows(layout, qkv, heads, head_dim, half_window, begin, end, std::span<Bf16Bits>(got_bf16),
                              precision);
      }
      expect_close(got, expected, fp32_tolerance, "packed_attention_rows", attention_scale(qkv));
      std::vector<Bf16Bits> rounded(got.size());
      reference::convert_fp32_to_bf16(got, rounded);
      EXPECT_EQ(got_bf16, rounded) << "packed_attention_rows bf16 output";
      // A bf16 projection gives what its values widened to fp32 give.
      std::vector<Bf16Bits> qkv_bf16(qkv.size());
      reference::convert_fp32_to_bf16(qkv, qkv_bf16);
      const auto qkv_rounded = widened(qkv_bf16);
      std::vector<Bf16Bits> from_rounded(rows * width, Bf16Bits{0x40e0}), from_bf16(rows * width, Bf16Bits{0x40e0});
      packed_attention_rows(layout, qkv_rounded, heads, head_dim, half_window, 0, rows,
                            std::span<Bf16Bits>(from_rounded), precision);
      packed_attention_rows(layout, std::span<const Bf16Bits>(qkv_bf16), heads, head_dim, half_window, 0, rows,
                            std::span<Bf16Bits>(from_bf16), precision);
      EXPECT_EQ(from_bf16, from_rounded) << "packed_attention_rows bf16 projection";
    }
  }
}

// Keys and values staged by row ranges that split sequences anywhere (odd rows, mid key block, one row),
// in any order and over storage that held NaN keys and values before: the same bits as attention over
// the bf16 rows, for every row range of the output.
TEST(KernelsConsistency, StagedKeyValuesMatchTheRowsTheyCameFrom) {
  for (const std::size_t head_dim : {32UL, 64UL}) {
    if (!StagedKeyValues::available(head_dim)) GTEST_SKIP() << "the bf16 attention kernel in use is not AMX";
    const std::vector<PackedSequence> layout{{0, 37}, {37, 128}, {165, 5}, {170, 1}, {171, 53}};
    const std::size_t rows = 240, heads = 3, width = heads * head_dim;
    std::vector<Bf16Bits> qkv(rows * 3 * width), stale(rows * 3 * width, Bf16Bits{0x7fc0});  // NaN
    reference::convert_fp32_to_bf16(random_values(qkv.size(), 1.5F, 720), qkv);
    for (const std::size_t half_window : {0UL, 16UL}) {
      std::vector<Bf16Bits> expected(rows * width, Bf16Bits{0x40e0}), got(rows * width, Bf16Bits{0x40e0});
      packed_attention_rows(layout, std::span<const Bf16Bits>(qkv), heads, head_dim, half_window, 0, rows,
                            std::span<Bf16Bits>(expected), Precision::bf16);
      // Stale NaN keys and values everywhere, padding included (one sequence over all rows, then the layout).
      StagedKeyValues staged;
      const PackedSequence all_rows[] = {{0, rows}};
      staged.reset(all_rows, heads, head_dim);
      staged.stage(all_rows, stale, 0, rows);
      staged.reset(layout, heads, head_dim);
      staged.stage(layout, stale, 0, rows);
      const std::pair<std::size_t, std::size_t> ranges[] = {{171, 172}, {80, 171}, {0, 19}, {172, rows}, {19, 80}};
      for (const auto& [begin, end] : ranges) staged.stage(layout, qkv, begin, end);
      for (const auto& [begin, end] : {std::pair{0UL, 100UL}, std::pair{100UL, rows}})
        packed_attention_rows(layout, qkv, staged, heads, head_dim, half_window, begin, end, got);
      EXPECT_EQ(got, expected) << "head_dim " << head_dim << " half_window " << half_window;
    }
  }
}

// Fused RoPE is apply_rope over the QKV rows, then attention.
TEST(KernelsConsistency, AttentionWithFusedRopeMatchesRopeThenAttention) {
  const std::vector<std::size_t> lengths{40, 23};
  for (const std::size_t window : {0UL, 6UL}) {
    const AttentionShape shape{.batch = 2, .seq = 40, .heads = 4, .kv_heads = 4, .head_dim = 64, .window = window};
    const auto qkv = random_values(shape.batch * shape.seq * shape.qkv_width(), 1.0F, 700);
    const RopeTable table = rope_table(shape.head_dim, 160000.0F, shape.seq);
    std::vector<int64_t> positions(shape.batch * shape.seq);
    for (std::size_t r = 0; r < positions.size(); ++r) positions[r] = static_cast<int64_t>(r % shape.seq);
    std::vector<float> rotated = qkv;
    apply_rope(rotated, positions.size(), shape.qkv_width(), 2 * shape.heads, shape.head_dim, shape.head_dim, positions,
               160000.0F);
    for (const Precision precision : {Precision::fp32, Precision::bf16}) {
      std::vector<float> expected(shape.batch * shape.seq * shape.out_width()), got(expected.size());
      attention(rotated, lengths, shape, false, expected, precision);
      attention(qkv, lengths, shape, false, got, precision, &table);
      expect_close(got, expected, precision == Precision::bf16 ? bf16_tolerance : fp32_tolerance,
                   "fused rope window " + std::to_string(window), attention_scale(rotated));
    }
  }
}

TEST(KernelsConsistency, GeluMulVariants) {
  unsigned seed = 420;
  for (const auto& variant : op_variants().gelu_mul) {
    if (!runnable(variant)) continue;
    for (const std::size_t size : {1UL, 15UL, 16UL, 17UL, 1000UL, 4099UL}) {
      const auto [x, gate] = gelu_mul_inputs(size, seed);
      std::vector<float> expected(size), got(size);
      reference::gelu_mul(x, gate, expected);
      variant.run(x, gate, got);
      // Judged against the inputs' scale: a lone value in gelu's negative tail is tiny, and relative
      // to itself its last bits would dominate.
      expect_close(got, expected, fp32_tolerance, std::string(variant.name) + " size " + std::to_string(size),
                   root_mean_square(x) * root_mean_square(gate));
    }
  }
}

TEST(KernelsConsistency, CachedAttentionHeadVariants) {
  unsigned seed = 450;
  struct Case {
    std::size_t m, n, first_query_position, head_dim;
  };
  // Prefills (m = n), branches after a prefix (m < n, some with keys past the last query), single
  // decode steps; head_dim below, at and above one and two vectors, odd ones included.
  const Case cases[] = {{1, 1, 0, 32},   {9, 9, 0, 16},    {17, 40, 23, 7},  {5, 70, 50, 40},
                        {1, 130, 129, 13}, {64, 64, 0, 128}, {33, 100, 60, 80}, {70, 200, 100, 64},
                        {40, 240, 200, 128}, {16, 16, 0, 32},  {48, 60, 5, 96}};
  for (const auto& variant : op_variants().cached_attention_head) {
    if (!runnable(variant)) continue;
    for (const Case& c : cases) {
      for (const bool causal : {false, true}) {
        // The queries of one head inside a wider fused row, keys/values of one kv head inside wider
        // rows, as the dispatcher passes them.
        const std::size_t q_stride = 3 * c.head_dim + 5;
        const std::size_t kv_stride = 2 * c.head_dim + 3;
        const auto q = random_values(c.m * q_stride, 1.5F, ++seed);
        const auto keys = random_values(c.n * kv_stride, 1.5F, ++seed);
        const auto values = random_values(c.n * kv_stride, 1.5F, ++seed);
        const std::size_t out_stride = c.head_dim + 3;
        std::vector<float> expected(c.m * out_stride, 7.0F), got(c.m * out_stride, 7.0F);
        CachedAttentionHeadTask task{.q = q.data(),
                                     .q_stride = q_stride,
                                     .m = c.m,
                                     .keys = keys.data(),
                                     .values = values.data(),
                                     .kv_stride = kv_stride,
                                     .n = c.n,
                                     .first_query_position = c.first_query_position,
                                     .causal = causal,
                                     .head_dim = c.head_dim,
                                     .scale = 1.0F / std::sqrt(static_cast<float>(c.head_dim)),
                                     .out = expected.data(),
                                     .out_stride = out_stride};
        reference::cached_attention_head(task);
        task.out = got.data();
        variant.run(task);
        expect_close(got, expected, variant.bf16_arithmetic ? bf16_tolerance : fp32_tolerance,
                     std::string(variant.name) + " m " + std::to_string(c.m) + " n " + std::to_string(c.n) +
                         " first " + std::to_string(c.first_query_position) + " head_dim " +
                         std::to_string(c.head_dim) + (causal ? " causal" : ""),
                     attention_scale(values));
        // Padding between rows is never written.
        for (std::size_t i = 0; i < c.m; ++i)
          for (std::size_t col = c.head_dim; col < out_stride; ++col) ASSERT_EQ(got[i * out_stride + col], 7.0F);
      }
    }
  }
}

// The chunked delta rule in fp32 against the reference's float64 chunks: the UT transform
// (I + A)⁻¹ amplifies rounding by its norm, a few units for L2-normalised keys and β < 1 (measured
// worst over these cases: 2.8e-5 of the RMS).
constexpr double gated_delta_tolerance = 1e-4;

TEST(KernelsConsistency, GatedDeltaHeadVariants) {
  unsigned seed = 700;
  struct Case {
    std::size_t k_heads, v_heads, k_dim, v_dim, rows, first_position, chunk;
    float decay_scale;  // g uniform in [−decay_scale, 0)
  };
  // The real 128 × 128 heads over several chunks, odd head sizes (masked vector tails), grouped
  // value heads, starts off the chunk grid, a single decode row, small chunks and strong decay.
  const Case cases[] = {{1, 1, 128, 128, 200, 0, 64, 0.3F}, {2, 4, 16, 12, 130, 0, 64, 0.3F},
                        {1, 2, 7, 20, 70, 37, 64, 0.3F},     {2, 2, 33, 17, 5, 62, 64, 0.3F},
                        {1, 1, 128, 128, 1, 300, 64, 0.3F},  {1, 1, 40, 24, 100, 10, 16, 0.3F},
                        {1, 1, 64, 64, 128, 0, 64, 8.0F},    {1, 2, 128, 128, 67, 61, 64, 0.05F}};
  for (const auto& variant : op_variants().gated_delta_head) {
    if (!runnable(variant)) continue;
    for (const Case& c : cases) {
      const GatedDeltaShape shape{.k_heads = c.k_heads, .v_heads = c.v_heads, .k_dim = c.k_dim, .v_dim = c.v_dim};
      const std::size_t qk_width = c.k_heads * c.k_dim;
      const std::size_t value_stride = c.v_heads * c.v_dim + 5;  // values inside a wider fused row
      auto query = random_values(c.rows * qk_width, 1.0F, ++seed);
      auto key = random_values(c.rows * qk_width, 1.0F, ++seed);
      reference::l2_norm_scaled(query, c.k_dim, 1e-6F, 1.0F / std::sqrt(static_cast<float>(c.k_dim)), query);
      reference::l2_norm_scaled(key, c.k_dim, 1e-6F, 1.0F, key);
      const auto value = random_values(c.rows * value_stride, 1.0F, ++seed);
      std::mt19937 generator(++seed);
      std::uniform_real_distribution<float> unit(0.0F, 1.0F);
      std::vector<float> g(c.rows * c.v_heads), beta(c.rows * c.v_heads);
      for (float& x : g) x = -c.decay_scale * unit(generator) - 1e-3F;
      for (float& x : beta) x = unit(generator);
      const GatedDeltaInputs inputs{.query = query, .key = key, .value = value, .value_stride = value_stride,
                                    .g = g, .beta = beta, .rows = c.rows};
      const auto initial = random_values(c.k_dim * c.v_dim, 0.5F, ++seed);
      const std::size_t out_width = c.v_heads * c.v_dim;
      for (std::size_t head = 0; head < c.v_heads; ++head) {
        std::vector<float> expected_state = initial, got_state = initial;
        std::vector<float> expected(c.rows * out_width, 7.0F), got(c.rows * out_width, 7.0F);
        reference::gated_delta_rule_head(inputs, shape, head, c.first_position, c.chunk, expected_state, expected);
        const unsigned control = _mm_getcsr();
        variant.run(inputs, shape, head, c.first_position, c.chunk, got_state, got);
        // A variant may flush subnormals while it runs, never for its caller.
        EXPECT_EQ(_mm_getcsr(), control);
        const std::string what = std::string(variant.name) + " k_dim " + std::to_string(c.k_dim) + " v_dim " +
                                 std::to_string(c.v_dim) + " rows " + std::to_string(c.rows) + " first " +
                                 std::to_string(c.first_position) + " head " + std::to_string(head);
        expect_close(got, expected, gated_delta_tolerance, what + " output");
        expect_close(got_state, expected_state, gated_delta_tolerance, what + " state");
        // Other heads' columns are never written.
        for (std::size_t r = 0; r < c.rows; ++r) {
          for (std::size_t col = 0; col < out_width; ++col) {
            if (col / c.v_dim != head) {
              ASSERT_EQ(got[r * out_width + col], 7.0F) << what;
            }
          }
        }
      }
    }
  }
}

TEST(KernelsConsistency, GatedDeltaNormVariants) {
  unsigned seed = 900;
  // Row widths of whole vectors (Qwen3.5's 128), partial ones and under one vector; rows with a
  // tiny norm, where eps dominates.
  for (const std::size_t width : {128UL, 100UL, 7UL}) {
    const std::size_t rows = 33;
    auto x = random_values(rows * width, 2.0F, ++seed);
    for (std::size_t i = 0; i < width; ++i) x[i] *= 1e-4F;
    const auto gate = random_values(rows * width, 3.0F, ++seed);
    const auto weight = random_values(width, 1.0F, ++seed);
    for (const auto& variant : op_variants().l2_norm_scaled) {
      if (!runnable(variant)) continue;
      std::vector<float> expected(x.size()), got(x.size());
      reference::l2_norm_scaled(x, width, 1e-6F, 0.125F, expected);
      variant.run(x, width, 1e-6F, 0.125F, got);
      expect_close(got, expected, fp32_tolerance, std::string(variant.name) + " l2 width " + std::to_string(width));
    }
    for (const auto& variant : op_variants().gated_rms_norm) {
      if (!runnable(variant)) continue;
      std::vector<float> expected(x.size()), got(x.size());
      reference::gated_rms_norm(x, gate, weight, 1e-6F, expected);
      variant.run(x, gate, weight, 1e-6F, got);
      expect_close(got, expected, fp32_tolerance,
                   std::string(variant.name) + " gated rms width " + std::to_string(width));
      std::vector<float> in_place = x;
      variant.run(in_place, gate, weight, 1e-6F, in_place);
      EXPECT_EQ(in_place, got) << variant.name << " in place, width " << width;
    }
  }
}

TEST(KernelsConsistency, CausalConv1dSiluVariants) {
  unsigned seed = 800;
  struct Case {
    std::size_t channels, kernel, rows, channel_begin, channel_end;
  };
  // Fewer rows than the history (the tail shifts), whole and partial vectors of channels, channel
  // ranges starting off a vector boundary (as the dispatcher's split hands them out).
  const Case cases[] = {{37, 4, 1, 0, 37},  {37, 4, 2, 0, 37},   {16, 4, 64, 0, 16},   {100, 4, 19, 3, 98},
                        {40, 3, 7, 0, 40},  {33, 1, 5, 0, 33},   {300, 4, 130, 17, 300}};
  for (const auto& variant : op_variants().causal_conv1d_silu) {
    if (!runnable(variant)) continue;
    for (const Case& c : cases) {
      const std::size_t x_stride = c.channels + 9;  // conv channels inside a wider fused row
      const auto x = random_values(c.rows * x_stride, 2.0F, ++seed);
      const auto weight = random_values(c.channels * c.kernel, 0.7F, ++seed);
      const auto initial_tail = random_values((c.kernel - 1) * c.channels, 2.0F, ++seed);
      std::vector<float> expected_tail = initial_tail, got_tail = initial_tail;
      std::vector<float> expected(c.rows * c.channels, 7.0F), got(c.rows * c.channels, 7.0F);
      reference::causal_conv1d_silu(x, c.rows, x_stride, weight, c.kernel, expected_tail, expected, c.channel_begin,
                                    c.channel_end);
      variant.run(x, c.rows, x_stride, weight, c.kernel, got_tail, got, c.channel_begin, c.channel_end);
      const std::string what = std::string(variant.name) + " channels " + std::to_string(c.channels) + " kernel " +
                               std::to_string(c.kernel) + " rows " + std::to_string(c.rows) + " range " +
                               std::to_string(c.channel_begin) + ".." + std::to_string(c.channel_end);
      expect_close(got, expected, fp32_tolerance, what + " output");
      // The tail is a copy of inputs: exact, and untouched outside the range.
      EXPECT_EQ(got_tail, expected_tail) << what;
      for (std::size_t t = 0; t < c.rows; ++t) {
        for (std::size_t ch = 0; ch < c.channels; ++ch) {
          if (ch < c.channel_begin || ch >= c.channel_end) {
            ASSERT_EQ(got[t * c.channels + ch], 7.0F) << what;
          }
        }
      }
    }
  }
}

TEST_F(ThreadCounts, PublicOpsMatchReference) {
  for (const int threads : {1, 2}) {
    set_thread_count(threads);
    const std::string label = " threads " + std::to_string(threads);
    {
      const std::size_t rows = 131, width = 384;  // big enough to be split across threads
      const auto x = random_values(rows * width, 2.0F, 501);
      const auto residual = random_values(rows * width, 2.0F, 502);
      const auto gamma = random_values(width, 1.0F, 503);
      const auto beta = random_values(width, 1.0F, 504);
      std::vector<float> expected(x.size()), got(x.size());
      reference::layer_norm(x, residual, gamma, beta, 1e-12F, expected);
      add_layer_norm(x, residual, gamma, beta, 1e-12F, got);
      expect_close(got, expected, fp32_tolerance, "add_layer_norm" + label);
      reference::layer_norm(x, {}, gamma, beta, 1e-5F, expected);
      layer_norm(x, gamma, beta, 1e-5F, got);
      expect_close(got, expected, fp32_tolerance, "layer_norm" + label);
      gelu(x, got);
      reference::gelu(x, expected);
      expect_close(got, expected, fp32_tolerance, "gelu" + label);
      softmax(x, width, got);
      reference::softmax(x, width, expected);
      expect_close(got, expected, fp32_tolerance, "softmax" + label);
      // x as [rows / 2, 2·width] fused [input | gate] rows.
      std::vector<float> fused_expected(rows / 2 * width), fused_got(rows / 2 * width);
      for (std::size_t row = 0; row < rows / 2; ++row)
        reference::gelu_mul(std::span(x).subspan(2 * row * width, width),
                            std::span(x).subspan((2 * row + 1) * width, width),
                            std::span(fused_expected).subspan(row * width, width));
      geglu(std::span(x).first(rows / 2 * 2 * width), width, fused_got);
      expect_close(fused_got, fused_expected, fp32_tolerance, "geglu" + label);
    }
    {
      // MiniLM-like heads with padding, and a grouped-query decoder shape with the causal flag.
      const AttentionShape shapes[] = {{.batch = 3, .seq = 45, .heads = 12, .kv_heads = 12, .head_dim = 32},
                                       {.batch = 2, .seq = 37, .heads = 4, .kv_heads = 2, .head_dim = 64},
                                       {.batch = 2, .seq = 37, .heads = 4, .kv_heads = 4, .head_dim = 32, .window = 6}};
      for (const AttentionShape& shape : shapes) {
        const std::vector<std::size_t> lengths =
            shape.batch == 3 ? std::vector<std::size_t>{45, 1, 30} : std::vector<std::size_t>{37, 20};
        const auto qkv = random_values(shape.batch * shape.seq * shape.qkv_width(), 1.0F, 505);
        for (const bool causal : {false, true}) {
          for (const Precision precision : {Precision::fp32, Precision::bf16}) {
            std::vector<float> got(shape.batch * shape.seq * shape.out_width(), 9.0F);
            attention(qkv, lengths, shape, causal, got, precision);
            expect_close(got, naive_attention(qkv, lengths, shape, causal),
                         precision == Precision::bf16 ? bf16_tolerance : fp32_tolerance,
                         "attention heads " + std::to_string(shape.heads) + " window " + std::to_string(shape.window) + label, attention_scale(qkv));
          }
        }
      }
    }
  }
}

TEST(KernelsConsistency, PoolingMatchesHandComputed) {
  // batch 2, seq 3, width 2; the second sequence has one padded row that must be ignored.
  const std::vector<float> hidden{1, 2, 3, 4, 5, 6, /**/ 3, 4, 5, 0, 100, 100};
  const std::vector<std::size_t> lengths{3, 2};
  std::vector<float> pooled(4);
  mean_pool(hidden, lengths, 3, pooled);
  EXPECT_EQ(pooled, (std::vector<float>{3, 4, 4, 2}));
  std::vector<float> normalised(4);
  l2_normalize(pooled, 2, normalised);
  EXPECT_FLOAT_EQ(normalised[0], 0.6F);
  EXPECT_FLOAT_EQ(normalised[1], 0.8F);
  EXPECT_FLOAT_EQ(normalised[2], 4.0F / std::sqrt(20.0F));
  EXPECT_FLOAT_EQ(normalised[3], 2.0F / std::sqrt(20.0F));
}

// The bf16-output forms of LayerNorm (also keeping its fp32 rows), RMSNorm, GeGLU and SwiGLU (a bf16 matmul's input
// written directly) give the same bits as the op followed by the conversion, at sizes that split across threads and
// leave partial row blocks.
TEST_F(ThreadCounts, Bf16OutputOpsEqualTheOpThenTheConversion) {
  unsigned seed = 900;
  for (const int threads : {1, 2}) {
    set_thread_count(threads);
    for (const auto& [rows, width] : {std::pair<std::size_t, std::size_t>{1, 8}, {13, 1024}, {300, 1024}, {37, 384}}) {
      const auto x = random_values(rows * width, 3.0F, ++seed);
      const auto gamma = random_values(width, 1.0F, ++seed);
      const auto beta = random_values(width, 1.0F, ++seed);
      std::vector<float> normed(x.size());
      layer_norm(x, gamma, beta, 1e-5F, normed);
      std::vector<Bf16Bits> expected(x.size()), got(x.size());
      convert_fp32_to_bf16(normed, expected);
      layer_norm_to_bf16(x, gamma, beta, 1e-5F, got);
      EXPECT_EQ(got, expected) << "layer_norm_to_bf16 rows " << rows << " width " << width << " threads " << threads;
      // Keeping the fp32 rows too, in place as a residual stream: the same fp32 bits and the same bf16 bits.
      std::vector<float> kept = x;
      std::fill(got.begin(), got.end(), Bf16Bits{0});
      layer_norm_to_bf16(kept, gamma, beta, 1e-5F, kept, got);
      EXPECT_EQ(kept, normed) << "layer_norm_to_bf16 (kept) rows " << rows << " width " << width << " threads "
                              << threads;
      EXPECT_EQ(got, expected) << "layer_norm_to_bf16 (kept) rows " << rows << " width " << width << " threads "
                               << threads;

      const auto fused = random_values(rows * 2 * width, 3.0F, ++seed);
      std::vector<float> gated(rows * width);
      geglu(fused, width, gated);
      std::vector<Bf16Bits> gated_expected(gated.size()), gated_got(gated.size());
      convert_fp32_to_bf16(gated, gated_expected);
      geglu_to_bf16(fused, width, gated_got);
      EXPECT_EQ(gated_got, gated_expected)
          << "geglu_to_bf16 rows " << rows << " width " << width << " threads " << threads;

      // From bf16 fused rows (a matmul writing bf16): the same bits as from their exact fp32 widening.
      std::vector<Bf16Bits> fused_bits(fused.size());
      convert_fp32_to_bf16(fused, fused_bits);
      const auto fused_widened = widened(fused_bits);
      geglu_to_bf16(fused_widened, width, gated_expected);
      geglu_to_bf16(fused_bits, width, gated_got);
      EXPECT_EQ(gated_got, gated_expected)
          << "geglu_to_bf16 from bf16 rows " << rows << " width " << width << " threads " << threads;

      const auto weight = random_values(width, 1.0F, ++seed);
      rms_norm(x, weight, 1e-6F, normed);
      convert_fp32_to_bf16(normed, expected);
      rms_norm_to_bf16(x, weight, 1e-6F, got);
      EXPECT_EQ(got, expected) << "rms_norm_to_bf16 rows " << rows << " width " << width << " threads " << threads;

      swiglu(fused, width, gated);
      convert_fp32_to_bf16(gated, gated_expected);
      swiglu_to_bf16(fused, width, gated_got);
      EXPECT_EQ(gated_got, gated_expected)
          << "swiglu_to_bf16 rows " << rows << " width " << width << " threads " << threads;
      // From a bf16 projection: the same as widening it first.
      std::vector<Bf16Bits> fused_bf16(fused.size());
      convert_fp32_to_bf16(fused, fused_bf16);
      swiglu_to_bf16(widened(fused_bf16), width, gated_expected);
      swiglu_to_bf16(fused_bf16, width, gated_got);
      EXPECT_EQ(gated_got, gated_expected)
          << "swiglu_to_bf16 of bf16 rows " << rows << " width " << width << " threads " << threads;

      // Over rows of one 128-wide head (Qwen3.5's GDN output) as well as the whole width.
      for (const std::size_t norm_width : {width, std::size_t{128}}) {
        if (width % norm_width != 0) continue;
        const auto gate = random_values(x.size(), 3.0F, ++seed);
        const auto head_weight = random_values(norm_width, 1.0F, ++seed);
        gated_rms_norm(x, gate, head_weight, 1e-6F, normed);
        convert_fp32_to_bf16(normed, expected);
        gated_rms_norm_to_bf16(x, gate, head_weight, 1e-6F, got);
        EXPECT_EQ(got, expected) << "gated_rms_norm_to_bf16 rows " << rows << " width " << norm_width << " threads "
                                 << threads;
      }
    }
  }
}

TEST_F(ThreadCounts, LinearMatchesReference) {
  struct Case {
    std::size_t rows, in, out;
    bool bias;
    Activation activation;
  };
  const Case cases[] = {{1, 7, 5, true, Activation::none},       {3, 384, 1152, true, Activation::none},
                        {17, 33, 65, true, Activation::gelu},    {128, 384, 1536, true, Activation::gelu},
                        {8, 1536, 384, false, Activation::none}, {1, 384, 384, true, Activation::none},
                        {130, 384, 384, true, Activation::none},
                        // K and N tails at odd row counts; the last two large enough for 2 threads, the
                        // last with rows in two chunks and panels in three groups (AMX kernel).
                        {100, 40, 200, true, Activation::gelu},  {100, 40, 200, false, Activation::none},
                        {200, 1024, 200, true, Activation::none}, {200, 2624, 200, true, Activation::none}};
  unsigned seed = 600;
  for (const int threads : {1, 2}) {
    set_thread_count(threads);
    for (const Precision precision : {Precision::fp32, Precision::bf16}) {
      const char* name = precision == Precision::fp32 ? "fp32" : "bf16";
      if (!linear_supported(precision)) {
        std::printf("[  SKIPPED ] PackedLinear %s is not supported on this CPU\n", name);
        continue;
      }
      const double tolerance = precision == Precision::fp32 ? fp32_tolerance : bf16_tolerance;
      for (const Case& c : cases) {
        const auto weight = random_values(c.out * c.in, 0.05F, ++seed);
        const auto bias = c.bias ? random_values(c.out, 0.5F, ++seed) : std::vector<float>{};
        const PackedLinear layer(weight, bias, c.in, c.out, precision, c.activation);
        // Twice per layer, and a second row count, so cached primitives are exercised.
        for (const std::size_t rows : {c.rows, c.rows, c.rows + 2}) {
          const auto x = random_values(rows * c.in, 1.0F, ++seed);
          std::vector<float> expected(rows * c.out), got(rows * c.out);
          reference::linear(x, weight, bias, c.in, c.out, c.activation, expected);
          layer.forward(x, got);
          expect_close(got, expected, tolerance,
                       std::string("linear ") + name + " M " + std::to_string(rows) + " K " +
                           std::to_string(c.in) + " N " + std::to_string(c.out) + " threads " +
                           std::to_string(threads));
          if (precision == Precision::bf16) {
            // Activations already rounded to bf16 give the same bits as the fp32 overload's own rounding.
            std::vector<Bf16Bits> rounded(x.size());
            convert_fp32_to_bf16(x, rounded);
            std::vector<float> from_bf16(rows * c.out);
            layer.forward(rounded, from_bf16);
            EXPECT_EQ(from_bf16, got) << "bf16-input linear M " << rows << " N " << c.out;
            // A bf16 destination holds the fp32 result rounded to bf16; the fp32 sums before the
            // rounding may be ordered differently, so a value may land one bf16 step away.
            std::vector<Bf16Bits> rounded_result(got.size()), bf16_out(got.size()), bf16_out_from_bf16(got.size());
            convert_fp32_to_bf16(got, rounded_result);
            layer.forward(x, bf16_out);
            layer.forward(rounded, bf16_out_from_bf16);
            EXPECT_EQ(bf16_out_from_bf16, bf16_out) << "bf16-input bf16-output linear M " << rows << " N " << c.out;
            for (std::size_t i = 0; i < got.size(); ++i) {
              // Same sign: neighbouring bit patterns are neighbouring values.
              ASSERT_LE(std::abs(int{bf16_out[i]} - int{rounded_result[i]}), 1)
                  << "bf16-output linear M " << rows << " N " << c.out << " at " << i;
            }
            if (c.activation == Activation::none) {
              std::vector<float> summed_fp32(rows * c.out, 0.5F), summed_bf16(rows * c.out, 0.5F);
              layer.forward_accumulate(x, summed_fp32);
              layer.forward_accumulate(rounded, summed_bf16);
              EXPECT_EQ(summed_bf16, summed_fp32) << "bf16-input accumulating linear M " << rows;
            }
          }
          if (c.activation != Activation::none) continue;
          // forward_accumulate adds the same product onto what y holds (a residual connection).
          const auto residual = random_values(rows * c.out, 1.0F, ++seed);
          std::vector<float> summed = residual;
          layer.forward_accumulate(x, summed);
          for (std::size_t i = 0; i < expected.size(); ++i) expected[i] += residual[i];
          expect_close(summed, expected, tolerance,
                       std::string("accumulating linear ") + name + " M " + std::to_string(rows) + " N " +
                           std::to_string(c.out) + " threads " + std::to_string(threads));
        }
      }
    }
  }
}

}  // namespace
}  // namespace s1::backend::cpu
