// The one op test of the backend seam (after ggml's test-backend-ops): one table of op cases, each
// run on every registered backend and compared with the reference backend's result. ctest runs
// this binary once per CPU class (S1SERVE_CPU_ISA = portable, avx2, avx_vnni, avx512, avx512_bf16, amx_bf16, with
// oneDNN capped to match), so every CPU variant of every op is covered; a class this CPU lacks is
// skipped with a message. A backend added later joins by its row in backend/registry.cpp.
//
// Tolerances are declared per case before comparing: the largest |got − want| relative to the RMS
// of want (ggml's normalised error), 2e-5 for fp32 and 5e-2 where operands or results are rounded
// to bf16 (8 significant bits; worst outputs of thousands sit a few standard deviations out).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <ostream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/linear.h"
#include "backend/cpu/variants.h"
#include "backend/quant_blocks.h"

namespace s1::backend {
namespace {

constexpr double fp32_tolerance = 2e-5;
constexpr double bf16_tolerance = 5e-2;
// Quantised matmuls: the kernels' int8 sums are exact and the reference's double, so only the fp32
// scaling of each block's sum differs (one activation rounded differently would be ~1e-2).
constexpr double quantized_tolerance = 1e-4;

// Inputs are drawn from a generator seeded by the case, so every backend sees the same values.
class Inputs {
 public:
  explicit Inputs(unsigned seed) : generator_(seed) {}

  Tensor normal(std::initializer_list<std::size_t> shape, float scale = 1.0F, DType dtype = DType::fp32) {
    Tensor t = Tensor::empty(dtype, shape);
    std::normal_distribution<float> distribution(0.0F, scale);
    fill(t, [&] { return distribution(generator_); });
    return t;
  }
  Tensor uniform(std::initializer_list<std::size_t> shape, float low, float high) {
    Tensor t = Tensor::empty(DType::fp32, shape);
    std::uniform_real_distribution<float> distribution(low, high);
    fill(t, [&] { return distribution(generator_); });
    return t;
  }
  // Rows scaled to unit L2 norm (the gated delta rule's queries and keys per head), times `scale`.
  Tensor unit_heads(std::size_t rows, std::size_t heads, std::size_t dim, float scale = 1.0F) {
    Tensor t = normal({rows, heads * dim});
    const auto values = t.values<float>();
    for (std::size_t h = 0; h < rows * heads; ++h) {
      double squares = 0.0;
      for (std::size_t c = 0; c < dim; ++c) squares += static_cast<double>(values[h * dim + c]) * values[h * dim + c];
      const auto inverse = static_cast<float>(scale / std::sqrt(squares + 1e-6));
      for (std::size_t c = 0; c < dim; ++c) values[h * dim + c] *= inverse;
    }
    return t;
  }

 private:
  template <class Draw>
  static void fill(const Tensor& t, Draw draw) {
    if (t.dtype() == DType::bf16) {
      for (std::uint16_t& value : t.values<std::uint16_t>()) value = float_to_bf16(draw());
    } else {
      for (float& value : t.values<float>()) value = draw();
    }
  }
  std::mt19937 generator_;
};

std::vector<float> floats(const Tensor& t) {
  std::vector<float> values;
  for (std::size_t r = 0; r < t.rows(); ++r) {
    for (std::size_t c = 0; c < t.row_size(); ++c) {
      const std::size_t offset = r * t.stride(0) + c;
      values.push_back(t.dtype() == DType::bf16 ? bf16_to_float(t.read<std::uint16_t>()[offset])
                                                : t.read<float>()[offset]);
    }
  }
  return values;
}

using Outputs = std::vector<std::vector<float>>;

struct OpCase {
  std::string name;
  double tolerance = fp32_tolerance;
  // Runs the op on `backend` over inputs drawn from Inputs(seed) and returns every output tensor
  // (state and tails included) as floats.
  std::function<Outputs(Backend& backend, Inputs& inputs)> run;
  // Matmul cases need this arithmetic on the backend (no bf16 matmul without AVX-512).
  Arithmetic arithmetic = Arithmetic::fp32;
};

// --- matmul -------------------------------------------------------------------------------------

OpCase matmul_case(std::size_t m, std::size_t k, std::size_t n, Arithmetic arithmetic, DType x_dtype, DType y_dtype,
                   Activation activation, bool bias, bool accumulate) {
  const bool bf16 = arithmetic == Arithmetic::bf16 || x_dtype == DType::bf16 || y_dtype == DType::bf16;
  std::string name = "matmul_" + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n) + "_" +
                     (arithmetic == Arithmetic::bf16 ? "bf16" : "fp32") + "_x" + std::string(dtype_name(x_dtype)) +
                     "_y" + std::string(dtype_name(y_dtype)) +
                     (activation == Activation::gelu        ? "_gelu"
                      : activation == Activation::relu      ? "_relu"
                      : activation == Activation::gelu_tanh ? "_gelu_tanh"
                                                            : "") +
                     (bias ? "_bias" : "") + (accumulate ? "_accumulate" : "");
  return {name, bf16 ? bf16_tolerance : fp32_tolerance,
          [=](Backend& backend, Inputs& inputs) {
            const Tensor weight = inputs.normal({n, k}, 1.0F / std::sqrt(static_cast<float>(k)));
            const Tensor b = bias ? inputs.normal({n}, 0.5F) : Tensor{};
            const Tensor x = inputs.normal({m, k}, 1.0F, x_dtype);
            Tensor y = accumulate ? inputs.normal({m, n}) : Tensor::empty(y_dtype, {m, n});
            const auto packed = backend.pack_matmul(weight, b, arithmetic, activation);
            backend.matmul({.x = x, .weight = packed.get(), .accumulate = accumulate, .y = y});
            return Outputs{floats(y)};
          },
          arithmetic};
}

// A q8_0 or q4_k weight [n, k] (k a multiple of its block), quantised as llama.cpp quantises.
OpCase quantized_matmul_case(DType weight_dtype, std::size_t m, std::size_t k, std::size_t n, DType x_dtype,
                             DType y_dtype, bool bias, bool accumulate) {
  const std::string name = "matmul_" + std::string(dtype_name(weight_dtype)) + "_" + std::to_string(m) + "x" +
                           std::to_string(k) + "x" + std::to_string(n) + "_x" + std::string(dtype_name(x_dtype)) +
                           "_y" + std::string(dtype_name(y_dtype)) + (bias ? "_bias" : "") +
                           (accumulate ? "_accumulate" : "");
  return {name, y_dtype == DType::bf16 ? bf16_tolerance : quantized_tolerance, [=](Backend& backend, Inputs& inputs) {
            const Tensor values = inputs.normal({n, k}, 1.0F / std::sqrt(static_cast<float>(k)));
            const Tensor weight = Tensor::empty(weight_dtype, {n, k});
            const auto blocks = weight.read_bytes();
            quant::quantize_row(weight_dtype, values.read<float>(), n * k, const_cast<std::byte*>(blocks.data()));
            const Tensor b = bias ? inputs.normal({n}, 0.5F) : Tensor{};
            const Tensor x = inputs.normal({m, k}, 1.0F, x_dtype);
            Tensor y = accumulate ? inputs.normal({m, n}) : Tensor::empty(y_dtype, {m, n});
            const auto packed = backend.pack_matmul(weight, b, Arithmetic::fp32, Activation::none);
            backend.matmul({.x = x, .weight = packed.get(), .accumulate = accumulate, .y = y});
            return Outputs{floats(y)};
          }};
}

// --- norms --------------------------------------------------------------------------------------

struct NormSetup {
  NormCall::Kind kind = NormCall::Kind::rms;
  std::size_t rows = 0, width = 0;
  DType y = DType::fp32;
  bool residual = false;
  float scale = 2.0F;
  float shift = 0.0F;  // added to x: an offset mean checks LayerNorm's two-pass variance
  float eps = 1e-6F;
  bool in_place = false;  // y is x, as the encoders run it
};

OpCase norm_case(NormSetup n) {
  const char* kinds[] = {"rms", "rms_gated", "layer"};
  const char* scale = n.scale < 1.0F ? "_tiny_values" : n.scale > 10.0F ? "_large_values" : "";
  const std::string name = std::string("norm_") + kinds[static_cast<int>(n.kind)] + "_" + std::to_string(n.rows) + "x" +
                           std::to_string(n.width) + "_y" + std::string(dtype_name(n.y)) +
                           (n.residual ? "_residual" : "") + scale + (n.shift != 0.0F ? "_shifted" : "") +
                           (n.in_place ? "_in_place" : "");
  return {name, n.y == DType::bf16 ? bf16_tolerance : fp32_tolerance, [=](Backend& backend, Inputs& inputs) {
            NormCall call{.kind = n.kind,
                          .x = inputs.normal({n.rows, n.width}, n.scale),
                          .weight = inputs.normal({n.width}),
                          .bias = n.kind == NormCall::Kind::layer ? inputs.normal({n.width}) : Tensor{},
                          .residual = n.residual ? inputs.normal({n.rows, n.width}) : Tensor{},
                          .gate = n.kind == NormCall::Kind::rms_gated ? inputs.normal({n.rows, n.width}) : Tensor{},
                          .eps = n.eps,
                          .y = Tensor::empty(n.y, {n.rows, n.width})};
            for (float& value : call.x.values<float>()) value += n.shift;
            if (n.in_place) call.y = call.x;
            backend.norm(call);
            return Outputs{floats(call.y)};
          }};
}

// --- RoPE ---------------------------------------------------------------------------------------

// x: rows strided inside a wider matrix when `padding` > 0 (queries inside a fused projection).
OpCase rope_case(std::size_t rows, std::size_t heads, std::size_t head_dim, std::size_t rotary_dim,
                 std::int64_t first_position, std::size_t padding) {
  const std::string name = "rope_" + std::to_string(rows) + "rows_" + std::to_string(heads) + "x" +
                           std::to_string(head_dim) + "_rotary" + std::to_string(rotary_dim) + "_from" +
                           std::to_string(first_position) + (padding ? "_strided" : "");
  return {name, fp32_tolerance, [=](Backend& backend, Inputs& inputs) {
            const Tensor wide = inputs.normal({rows, heads * head_dim + padding});
            std::vector<std::int64_t> positions;
            for (std::size_t r = 0; r < rows; ++r)
              positions.push_back(first_position + static_cast<std::int64_t>(3 * r));
            const Tensor x = wide.slice_columns(0, heads * head_dim);
            backend.rope({.x = x,
                          .heads = heads,
                          .head_dim = head_dim,
                          .rotary_dim = rotary_dim,
                          .theta = 1000000.0F,
                          .positions = Tensor::of(std::span<const std::int64_t>(positions))});
            return Outputs{floats(wide)};
          }};
}

// M-RoPE: Qwen3.5's interleaved axes over the rotary frequencies, three positions per row (an image
// grid's rows and columns after text).
OpCase mrope_case(std::size_t rows, std::size_t heads, std::size_t head_dim, std::size_t rotary_dim,
                  std::size_t padding) {
  const std::string name = "mrope_" + std::to_string(rows) + "rows_" + std::to_string(heads) + "x" +
                           std::to_string(head_dim) + "_rotary" + std::to_string(rotary_dim) +
                           (padding ? "_strided" : "");
  return {name, fp32_tolerance, [=](Backend& backend, Inputs& inputs) {
            const Tensor wide = inputs.normal({rows, heads * head_dim + padding});
            std::vector<std::int64_t> positions(3 * rows);
            for (std::size_t r = 0; r < rows; ++r) {
              positions[r] = 7;
              positions[rows + r] = 7 + static_cast<std::int64_t>(r / 4);
              positions[2 * rows + r] = 7 + static_cast<std::int64_t>(r % 4);
            }
            std::vector<std::uint8_t> axes;
            for (std::size_t j = 0; j < rotary_dim / 2; ++j) axes.push_back(static_cast<std::uint8_t>(j % 3));
            const Tensor x = wide.slice_columns(0, heads * head_dim);
            backend.rope({.x = x,
                          .heads = heads,
                          .head_dim = head_dim,
                          .rotary_dim = rotary_dim,
                          .theta = 10000000.0F,
                          .positions = Tensor::of(std::span<const std::int64_t>(positions)),
                          .axes = axes});
            return Outputs{floats(wide)};
          }};
}

// --- attention ----------------------------------------------------------------------------------

struct AttentionSetup {
  std::string name;
  std::vector<std::size_t> lengths;  // one segment each, stacked
  std::size_t prefix = 0;
  std::size_t heads = 4, kv_heads = 4, head_dim = 16;
  bool causal = true;
  std::size_t window = 0;
  Arithmetic arithmetic = Arithmetic::fp32;
  DType out = DType::fp32;
};

OpCase attention_case(AttentionSetup setup) {
  const bool bf16 = setup.arithmetic == Arithmetic::bf16 || setup.out == DType::bf16;
  return {"attention_" + setup.name, bf16 ? bf16_tolerance : fp32_tolerance, [=](Backend& backend, Inputs& inputs) {
            std::size_t rows = 0;
            std::vector<AttentionSegment> segments;
            for (const std::size_t length : setup.lengths) {
              segments.push_back({rows, length});
              rows += length;
            }
            const std::size_t q_width = setup.heads * setup.head_dim, kv_width = setup.kv_heads * setup.head_dim;
            // One fused projection [q | k | v], read in place through column views.
            const Tensor qkv = inputs.normal({rows, q_width + 2 * kv_width});
            AttentionCall call{.q = qkv.slice_columns(0, q_width),
                               .k = qkv.slice_columns(q_width, kv_width),
                               .v = qkv.slice_columns(q_width + kv_width, kv_width),
                               .segments = segments,
                               .heads = setup.heads,
                               .kv_heads = setup.kv_heads,
                               .head_dim = setup.head_dim,
                               .causal = setup.causal,
                               .window = setup.window,
                               .scale = 1.0F / std::sqrt(static_cast<float>(setup.head_dim)),
                               .arithmetic = setup.arithmetic,
                               .out = Tensor::empty(setup.out, {rows, q_width})};
            if (setup.prefix > 0) {
              call.prefix_k = inputs.normal({setup.prefix, kv_width});
              call.prefix_v = inputs.normal({setup.prefix, kv_width});
            }
            backend.attention(call);
            return Outputs{floats(call.out)};
          }};
}

// --- gated delta rule ---------------------------------------------------------------------------

OpCase gated_delta_case(const std::string& name, std::size_t rows, std::size_t k_heads, std::size_t v_heads,
                        std::size_t k_dim, std::size_t v_dim, bool recurrent, bool initial,
                        std::size_t first_position) {
  return {"gated_delta_" + name, 1e-4, [=](Backend& backend, Inputs& inputs) {
            // A value stride wider than the values: value rows inside a fused projection.
            const Tensor value_rows = inputs.normal({rows, v_heads * v_dim + 5});
            GatedDeltaCall call{.query = inputs.unit_heads(rows, k_heads, k_dim, 1.0F / std::sqrt(float(k_dim))),
                                .key = inputs.unit_heads(rows, k_heads, k_dim),
                                .value = value_rows.slice_columns(0, v_heads * v_dim),
                                .g = inputs.uniform({rows, v_heads}, -0.7F, -0.01F),
                                .beta = inputs.uniform({rows, v_heads}, 0.05F, 0.95F),
                                .k_heads = k_heads,
                                .v_heads = v_heads,
                                .k_dim = k_dim,
                                .v_dim = v_dim,
                                .first_position = first_position,
                                .chunk_size = 64,
                                .out = Tensor::empty(DType::fp32, {rows, v_heads * v_dim})};
            const Tensor start = inputs.normal({v_heads, k_dim * v_dim}, 0.3F);
            if (recurrent) {
              call.state = start;
              backend.gated_delta_recurrent(call);
            } else {
              if (initial) call.initial = start;
              call.state = Tensor::empty(DType::fp32, {v_heads, k_dim * v_dim});
              backend.gated_delta_chunked(call);
            }
            return Outputs{floats(call.out), floats(call.state)};
          }};
}

// --- short convolutions -------------------------------------------------------------------------

OpCase short_conv_case(ShortConvCall::Kind kind, std::size_t rows, std::size_t channels, std::size_t kernel, bool bias,
                       std::size_t padding) {
  const bool gated = kind == ShortConvCall::Kind::gated;
  const std::string name = std::string("short_conv_") + (gated ? "gated_" : "silu_") + std::to_string(rows) + "x" +
                           std::to_string(channels) + "_kernel" + std::to_string(kernel) + (bias ? "_bias" : "") +
                           (padding ? "_strided" : "");
  return {name, fp32_tolerance, [=](Backend& backend, Inputs& inputs) {
            const std::size_t width = (gated ? 3 : 1) * channels;
            const Tensor wide = inputs.normal({rows, width + padding});
            ShortConvCall call{.kind = kind,
                               .x = wide.slice_columns(0, width),
                               .weight = inputs.normal({channels, kernel}, 0.5F),
                               .bias = bias ? inputs.normal({channels}) : Tensor{},
                               .tail = inputs.normal({kernel - 1, channels}),
                               .y = Tensor::empty(DType::fp32, {rows, channels})};
            if (padding == 0) call.x = wide;
            backend.short_conv(call);
            return Outputs{floats(call.y), floats(call.tail)};
          }};
}

// --- gated linear units, lookups, softmax -------------------------------------------------------

OpCase glu_case(GluCall::Kind kind, std::size_t rows, std::size_t width, DType x_dtype, DType y_dtype,
                bool extremes = false) {
  const std::string name = std::string(kind == GluCall::Kind::swiglu ? "swiglu_" : "geglu_") + std::to_string(rows) +
                           "x" + std::to_string(width) + "_x" + std::string(dtype_name(x_dtype)) + "_y" +
                           std::string(dtype_name(y_dtype)) + (extremes ? "_extremes" : "");
  const bool bf16 = x_dtype == DType::bf16 || y_dtype == DType::bf16;
  return {name, bf16 ? bf16_tolerance : fp32_tolerance, [=](Backend& backend, Inputs& inputs) {
            GluCall call{.kind = kind,
                         .x = inputs.normal({rows, 2 * width}, 2.0F, x_dtype),
                         .y = Tensor::empty(y_dtype, {rows, width})};
            if (extremes) {
              // e^(−a) overflows fp32 at −120: SiLU must still be ≈ 0, not NaN; and 0, −0-ish, +120.
              const auto row = call.x.values<float>();
              row[0] = -120.0F, row[1] = 120.0F, row[2] = 0.0F, row[3] = -1e-7F, row[4] = -12.0F;
            }
            backend.glu(call);
            return Outputs{floats(call.y)};
          }};
}

OpCase activate_case(Activation activation, std::size_t rows, std::size_t width, bool in_place) {
  const std::string name = std::string(activation == Activation::gelu        ? "activate_gelu_"
                                       : activation == Activation::gelu_tanh ? "activate_gelu_tanh_"
                                                                             : "activate_relu_") +
                           std::to_string(rows) + "x" + std::to_string(width) + (in_place ? "_in_place" : "");
  return {name, fp32_tolerance, [=](Backend& backend, Inputs& inputs) {
            const Tensor x = inputs.normal({rows, width}, 3.0F);
            const Tensor y = in_place ? x : Tensor::empty(DType::fp32, {rows, width});
            backend.activate(activation, x, y);
            return Outputs{floats(y)};
          }};
}

OpCase embedding_case(DType table_dtype) {
  return {"embedding_" + std::string(dtype_name(table_dtype)), 0.0, [=](Backend& backend, Inputs& inputs) {
            const Tensor table = inputs.normal({50, 24}, 1.0F, table_dtype);
            static const std::vector<std::int32_t> ids{3, 0, 49, 3, 17};
            const Tensor y = Tensor::empty(DType::fp32, {ids.size(), 24});
            backend.embedding(table, Tensor::of(std::span<const std::int32_t>(ids)), y);
            return Outputs{floats(y)};
          }};
}

OpCase embedding_bag_case(DType table_dtype) {
  return {"embedding_bag_" + std::string(dtype_name(table_dtype)), fp32_tolerance,
          [=](Backend& backend, Inputs& inputs) {
            const Tensor table = inputs.normal({36, 20}, 1.0F, table_dtype);
            // Four taps per row, as a bilinear position grid reads them, with a repeated id.
            static const std::vector<std::int32_t> ids{0, 1, 6, 7, 35, 35, 29, 30, 3, 9, 3, 9};
            const Tensor weights = inputs.normal({3, 4}, 1.0F);
            const Tensor y = Tensor::empty(DType::fp32, {3, 20});
            backend.embedding_bag(table, Tensor::of(std::span<const std::int32_t>(ids)).reshape({3, 4}), weights, y);
            return Outputs{floats(y)};
          }};
}

OpCase gather_rows_case() {
  return {"gather_rows", 0.0, [](Backend& backend, Inputs& inputs) {
            const Tensor x = inputs.normal({9, 13});
            static const std::vector<std::int32_t> rows{8, 0, 4, 4};
            const Tensor y = Tensor::empty(DType::fp32, {rows.size(), 13});
            backend.gather_rows(x, Tensor::of(std::span<const std::int32_t>(rows)), y);
            return Outputs{floats(y)};
          }};
}

OpCase softmax_case(std::size_t rows, std::size_t columns, bool chosen, bool log, float scale = 4.0F) {
  const std::string name = "softmax_" + std::to_string(rows) + "x" + std::to_string(columns) +
                           (chosen ? "_chosen" : "") + (log ? "_log" : "") + (scale != 4.0F ? "_wide_logits" : "");
  return {name, fp32_tolerance, [=](Backend& backend, Inputs& inputs) {
            const Tensor x = inputs.normal({rows, columns}, scale);
            static const std::vector<std::int32_t> picked{2, 0, 2};
            const Tensor which = chosen ? Tensor::of(std::span<const std::int32_t>(picked)) : Tensor{};
            const Tensor y = Tensor::empty(DType::fp32, {chosen ? picked.size() : rows, columns});
            backend.softmax_rows(x, which, log, y);
            return Outputs{floats(y)};
          }};
}

std::vector<OpCase> op_cases() {
  using enum DType;
  std::vector<OpCase> cases;
  // Matmul: odd sizes (no multiple of 16 anywhere), a tile-sized one and a long one, each epilogue.
  for (const auto& [m, k, n] :
       std::vector<std::array<std::size_t, 3>>{{1, 7, 3}, {5, 33, 17}, {48, 64, 96}, {300, 96, 40}}) {
    cases.push_back(matmul_case(m, k, n, Arithmetic::fp32, fp32, fp32, Activation::none, false, false));
    cases.push_back(matmul_case(m, k, n, Arithmetic::bf16, fp32, fp32, Activation::none, false, false));
  }
  cases.push_back(matmul_case(19, 40, 24, Arithmetic::fp32, fp32, fp32, Activation::gelu, true, false));
  cases.push_back(matmul_case(19, 40, 24, Arithmetic::fp32, fp32, fp32, Activation::none, true, true));
  cases.push_back(matmul_case(19, 40, 24, Arithmetic::fp32, bf16, bf16, Activation::none, true, false));
  cases.push_back(matmul_case(19, 40, 24, Arithmetic::bf16, fp32, bf16, Activation::gelu, true, false));
  cases.push_back(matmul_case(19, 40, 24, Arithmetic::fp32, fp32, fp32, Activation::relu, true, false));
  cases.push_back(matmul_case(19, 40, 24, Arithmetic::bf16, fp32, bf16, Activation::relu, true, false));
  cases.push_back(matmul_case(19, 40, 24, Arithmetic::fp32, fp32, fp32, Activation::gelu_tanh, true, false));
  cases.push_back(matmul_case(19, 40, 24, Arithmetic::bf16, fp32, bf16, Activation::gelu_tanh, true, false));
  cases.push_back(matmul_case(19, 40, 24, Arithmetic::bf16, bf16, fp32, Activation::none, true, true));
  cases.push_back(matmul_case(19, 40, 24, Arithmetic::bf16, fp32, fp32, Activation::none, true, true));
  cases.push_back(matmul_case(19, 40, 24, Arithmetic::bf16, fp32, fp32, Activation::gelu_tanh, true, false));
  cases.push_back(matmul_case(19, 40, 24, Arithmetic::bf16, fp32, fp32, Activation::gelu, true, false));
  cases.push_back(matmul_case(3, 128, 128, Arithmetic::bf16, fp32, fp32, Activation::gelu, true, false));
  cases.push_back(matmul_case(57, 384, 32, Arithmetic::bf16, fp32, fp32, Activation::none, true, true));
  cases.push_back(matmul_case(19, 40, 24, Arithmetic::bf16, bf16, bf16, Activation::none, false, false));
  // Quantised weights: odd row and column counts (tails of the 16-column tiles and of each kernel's
  // row tile), one block and many, bf16 rows in and out, bias, accumulation, and one large enough
  // to split across threads.
  for (const auto dtype : {q8_0, q4_k}) {
    const std::size_t block = block_values(dtype);
    for (const auto& [m, k, n] : std::vector<std::array<std::size_t, 3>>{
             {1, block, 3}, {5, 2 * block, 17}, {7, block, 33}, {33, 3 * block, 50}, {300, block, 40}}) {
      cases.push_back(quantized_matmul_case(dtype, m, k, n, fp32, fp32, false, false));
    }
    cases.push_back(quantized_matmul_case(dtype, 19, 2 * block, 24, fp32, fp32, true, false));
    cases.push_back(quantized_matmul_case(dtype, 19, 2 * block, 24, bf16, fp32, true, true));
    cases.push_back(quantized_matmul_case(dtype, 19, 2 * block, 24, fp32, bf16, true, false));
    cases.push_back(quantized_matmul_case(dtype, 19, 2 * block, 24, bf16, bf16, false, false));
    cases.push_back(quantized_matmul_case(dtype, 130, 1024, 200, fp32, fp32, false, false));
  }
  // Norms: odd widths and a width of one, tiny and large values, a long sequence, bf16 outputs,
  // LayerNorm's Add & Norm over an offset mean, in place.
  using Kind = NormCall::Kind;
  for (const auto kind : {Kind::rms, Kind::rms_gated, Kind::layer}) {
    cases.push_back(norm_case({.kind = kind, .rows = 7, .width = 33}));
    cases.push_back(norm_case({.kind = kind, .rows = 300, .width = 384}));
    cases.push_back(norm_case({.kind = kind, .rows = 7, .width = 33, .y = bf16}));
    cases.push_back(norm_case({.kind = kind, .rows = 3, .width = 1000, .in_place = true}));
  }
  for (const float scale : {1e-3F, 300.0F}) {
    cases.push_back(norm_case({.kind = Kind::rms, .rows = 7, .width = 17, .scale = scale}));
    cases.push_back(norm_case({.kind = Kind::rms, .rows = 7, .width = 1000, .scale = scale}));
  }
  cases.push_back(norm_case({.kind = Kind::rms, .rows = 5, .width = 1}));
  cases.push_back(norm_case({.kind = Kind::rms, .rows = 9, .width = 48, .residual = true}));
  for (const std::size_t width : {1UL, 7UL, 31UL, 1000UL}) {
    for (const bool residual : {false, true}) {
      cases.push_back(norm_case({.kind = Kind::layer,
                                 .rows = 17,
                                 .width = width,
                                 .residual = residual,
                                 .scale = 3.0F,
                                 .shift = 20.0F,
                                 .eps = 1e-12F}));
    }
  }
  cases.push_back(norm_case({.kind = Kind::layer,
                             .rows = 17,
                             .width = 31,
                             .residual = true,
                             .scale = 3.0F,
                             .shift = 20.0F,
                             .eps = 1e-12F,
                             .in_place = true}));
  // RoPE: full and partial rotary, strided rows, long positions.
  cases.push_back(rope_case(5, 3, 16, 16, 0, 0));
  cases.push_back(rope_case(6, 2, 32, 8, 11, 0));
  cases.push_back(rope_case(4, 4, 64, 64, 31000, 40));
  cases.push_back(mrope_case(12, 2, 32, 16, 0));
  cases.push_back(mrope_case(8, 3, 64, 16, 24));
  // Attention: an encoder's packed batch (bidirectional, a sliding window), decoder prefill and
  // branches after a shared prefix with grouped-query heads, long sequences, bf16.
  cases.push_back(attention_case({.name = "bidirectional_packed", .lengths = {5, 17, 1}, .causal = false}));
  cases.push_back(attention_case({.name = "bidirectional_window", .lengths = {23, 9}, .causal = false, .window = 4}));
  cases.push_back(attention_case({.name = "causal_window", .lengths = {21}, .causal = true, .window = 5}));
  cases.push_back(
      attention_case({.name = "causal_prefill_gqa", .lengths = {37}, .heads = 8, .kv_heads = 2, .head_dim = 32}));
  cases.push_back(attention_case({.name = "branches_after_prefix_gqa",
                                  .lengths = {1, 7, 12},
                                  .prefix = 23,
                                  .heads = 8,
                                  .kv_heads = 2,
                                  .head_dim = 32}));
  cases.push_back(attention_case(
      {.name = "bidirectional_branches_after_prefix", .lengths = {4, 9}, .prefix = 11, .causal = false}));
  cases.push_back(attention_case({.name = "long_branches_after_prefix",
                                  .lengths = {130, 70},
                                  .prefix = 300,
                                  .heads = 4,
                                  .kv_heads = 1,
                                  .head_dim = 64}));
  cases.push_back(attention_case({.name = "bf16_branches_after_prefix",
                                  .lengths = {3, 40},
                                  .prefix = 50,
                                  .heads = 4,
                                  .kv_heads = 2,
                                  .head_dim = 64,
                                  .arithmetic = Arithmetic::bf16,
                                  .out = bf16}));
  cases.push_back(attention_case({.name = "bf16_causal_head_dim_not_tiled",
                                  .lengths = {19},
                                  .heads = 2,
                                  .kv_heads = 1,
                                  .head_dim = 24,
                                  .arithmetic = Arithmetic::bf16}));
  // Gated delta rule: across a chunk boundary, from a carried state off the chunk grid, grouped
  // value heads, a decode step and a few recurrent steps.
  cases.push_back(gated_delta_case("chunked_from_zero", 70, 2, 4, 16, 8, false, false, 0));
  cases.push_back(gated_delta_case("chunked_continuing_off_grid", 45, 1, 2, 32, 16, false, true, 37));
  cases.push_back(gated_delta_case("chunked_long", 200, 2, 2, 16, 16, false, true, 0));
  cases.push_back(gated_delta_case("recurrent_step", 1, 2, 4, 16, 8, true, false, 0));
  cases.push_back(gated_delta_case("recurrent_rows", 5, 1, 3, 8, 12, true, false, 0));
  // Short convolutions: Qwen3.5's conv + SiLU (strided rows) and LFM2's gated conv.
  cases.push_back(short_conv_case(ShortConvCall::Kind::silu, 9, 19, 4, false, 0));
  cases.push_back(short_conv_case(ShortConvCall::Kind::silu, 1, 40, 4, false, 7));
  cases.push_back(short_conv_case(ShortConvCall::Kind::silu, 130, 64, 4, false, 0));
  cases.push_back(short_conv_case(ShortConvCall::Kind::gated, 6, 13, 3, true, 0));
  cases.push_back(short_conv_case(ShortConvCall::Kind::gated, 1, 16, 3, false, 0));
  // Gated linear units.
  for (const auto kind : {GluCall::Kind::swiglu, GluCall::Kind::geglu}) {
    cases.push_back(glu_case(kind, 7, 37, fp32, fp32));
    cases.push_back(glu_case(kind, 7, 37, fp32, bf16));
    cases.push_back(glu_case(kind, 7, 37, bf16, bf16));
    cases.push_back(glu_case(kind, 7, 37, bf16, fp32));
    cases.push_back(glu_case(kind, 200, 256, fp32, fp32));
    cases.push_back(glu_case(kind, 1, 4099, fp32, fp32, true));
  }
  // Activations off a matmul's epilogue: odd widths, in place as CLM's heads run them.
  for (const auto activation : {Activation::gelu, Activation::relu, Activation::gelu_tanh}) {
    cases.push_back(activate_case(activation, 3, 37, false));
    cases.push_back(activate_case(activation, 2, 1025, true));
  }
  cases.push_back(embedding_case(fp32));
  cases.push_back(embedding_case(bf16));
  cases.push_back(embedding_bag_case(fp32));
  cases.push_back(embedding_bag_case(bf16));
  cases.push_back(gather_rows_case());
  cases.push_back(softmax_case(5, 11, false, false));
  cases.push_back(softmax_case(3, 1000, true, false));
  cases.push_back(softmax_case(4, 33, false, true));
  cases.push_back(softmax_case(4, 1, false, false));
  cases.push_back(softmax_case(4, 257, false, false, 30.0F));
  return cases;
}

double root_mean_square(const std::vector<float>& values) {
  double squares = 0.0;
  for (const float value : values) squares += static_cast<double>(value) * value;
  return std::sqrt(squares / static_cast<double>(std::max<std::size_t>(values.size(), 1)));
}

// The CPU class this process runs (ctest sets S1SERVE_CPU_ISA), or the CPU's own when unset.
std::string cpu_class() {
  const char* cap = std::getenv("S1SERVE_CPU_ISA");
  return cap == nullptr || *cap == '\0' ? "native" : cap;
}

bool cpu_class_runs() {
  const std::string cap = cpu_class();
  for (const auto isa : {cpu::Isa::portable, cpu::Isa::avx2, cpu::Isa::avx_vnni, cpu::Isa::avx512,
                         cpu::Isa::avx512_bf16, cpu::Isa::amx_bf16}) {
    if (cap == cpu::isa_name(isa)) return cpu::isa_supported(isa);
  }
  return true;
}

struct Param {
  std::string backend;
  std::size_t index;
};
void PrintTo(const Param& param, std::ostream* out) { *out << param.backend << " case " << param.index; }

class Ops : public ::testing::TestWithParam<Param> {};

TEST_P(Ops, MatchesTheReference) {
  if (!cpu_class_runs()) GTEST_SKIP() << "this CPU lacks " << cpu_class() << "; its variants run where it has it";
  const OpCase op = op_cases()[GetParam().index];
  const auto backend = create_backend(GetParam().backend);
  if (!backend->supports(op.arithmetic)) GTEST_SKIP() << backend->name() << " has no bf16 matmul on this CPU class";
  const auto reference = create_backend("reference");
  const unsigned seed = static_cast<unsigned>(std::hash<std::string>{}(op.name));
  Inputs want_inputs(seed), got_inputs(seed);
  const auto want = op.run(*reference, want_inputs);
  const auto got = op.run(*backend, got_inputs);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t o = 0; o < want.size(); ++o) {
    ASSERT_EQ(got[o].size(), want[o].size()) << "output " << o;
    const double scale = std::max(root_mean_square(want[o]), 1e-30);
    double worst = 0.0;
    for (std::size_t i = 0; i < want[o].size(); ++i) {
      const double error = std::fabs(static_cast<double>(got[o][i]) - want[o][i]);
      worst = std::isnan(error) ? std::numeric_limits<double>::infinity() : std::max(worst, error);
    }
    EXPECT_LE(worst / scale, op.tolerance)
        << op.name << " output " << o << " on " << backend->name() << " (" << cpu_class() << ")";
  }
}

std::vector<Param> params() {
  std::vector<Param> all;
  const std::size_t count = op_cases().size();
  for (const BackendEntry& entry : backends()) {
    if (entry.name == "reference" || !entry.available()) continue;
    for (std::size_t i = 0; i < count; ++i) all.push_back({std::string(entry.name), i});
  }
  return all;
}

INSTANTIATE_TEST_SUITE_P(EveryBackend, Ops, ::testing::ValuesIn(params()),
                         [](const auto& test) { return test.param.backend + "_" + op_cases()[test.param.index].name; });

// Bad calls are errors, not crashes, on every backend.
TEST(OpErrors, AnIdOutsideTheEmbeddingTableIsOutOfRange) {
  for (const BackendEntry& entry : backends()) {
    const auto backend = entry.create();
    const Tensor table = Tensor::empty(DType::fp32, {4, 3});
    const std::vector<std::int32_t> ids{1, 4};
    EXPECT_THROW(
        backend->embedding(table, Tensor::of(std::span<const std::int32_t>(ids)), Tensor::empty(DType::fp32, {2, 3})),
        std::out_of_range)
        << entry.name;
  }
}

TEST(OpErrors, AMatmulOnAnotherBackendsWeightIsRefused) {
  const auto reference = create_backend("reference");
  const auto packed =
      reference->pack_matmul(Tensor::empty(DType::fp32, {3, 2}), {}, Arithmetic::fp32, Activation::none);
  for (const BackendEntry& entry : backends()) {
    if (entry.name == "reference") continue;
    const auto backend = entry.create();
    EXPECT_THROW(
        backend->matmul(
            {.x = Tensor::empty(DType::fp32, {1, 2}), .weight = packed.get(), .y = Tensor::empty(DType::fp32, {1, 3})}),
        std::invalid_argument)
        << entry.name;
  }
}

// Emulated bf16 matmuls (AVX-512 without BF16) are slower than fp32 ones: bf16 is preferred only
// with bf16 arithmetic, on each CPU class ctest runs.
TEST(CpuClass, Bf16IsPreferredOnlyWithBf16Arithmetic) {
  const bool bf16 = cpu::isa_supported(cpu::Isa::avx512_bf16);
  EXPECT_EQ(cpu::preferred_linear_precision(), bf16 ? cpu::Precision::bf16 : cpu::Precision::fp32) << cpu_class();
}

TEST(Registry, AnUnknownBackendNamesTheKnownOnes) {
  try {
    (void)create_backend("tpu");
    FAIL() << "no error";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("reference, cpu"), std::string::npos) << error.what();
  }
}

TEST(Tensors, AReadOnlyViewRefusesWrites) {
  const std::vector<float> values{1.0F, 2.0F};
  const Tensor t = Tensor::of(std::span<const float>(values));
  EXPECT_EQ(t.read_values<float>()[1], 2.0F);
  EXPECT_THROW((void)t.data<float>(), std::invalid_argument);
  EXPECT_THROW((void)t.read<std::uint16_t>(), std::invalid_argument);
}

TEST(Tensors, QuantisedRowsAreWholeBlocks) {
  EXPECT_THROW((void)Tensor::empty(DType::q8_0, {2, 33}), std::invalid_argument);
  EXPECT_THROW((void)Tensor::empty(DType::q4_k, {1, 32}), std::invalid_argument);
  const Tensor t = Tensor::empty(DType::q8_0, {3, 64});
  EXPECT_EQ(t.read_bytes().size(), 3 * 2 * 34U);
  EXPECT_EQ(t.slice_rows(1, 2).read_bytes().data(), t.read_bytes().data() + 2 * 34);
  EXPECT_THROW((void)t.slice_columns(16, 32), std::invalid_argument);
  EXPECT_THROW((void)t.read<std::int8_t>(), std::invalid_argument);
}

TEST(Tensors, HalfPrecisionRoundsToNearestEven) {
  EXPECT_EQ(float_to_f16(1.0F), 0x3C00);
  EXPECT_EQ(float_to_f16(65504.0F), 0x7BFF);
  EXPECT_EQ(float_to_f16(65520.0F), 0x7C00);             // rounds past the largest half
  EXPECT_EQ(float_to_f16(1.0F + 0x1p-11F), 0x3C00);      // a tie, to even
  EXPECT_EQ(float_to_f16(1.0F + 3 * 0x1p-11F), 0x3C02);  // a tie, to even (upwards)
  EXPECT_EQ(float_to_f16(0x1p-24F), 0x0001);             // the smallest subnormal
  EXPECT_EQ(float_to_f16(-0x1p-25F), 0x8000);            // a tie to zero keeps the sign
  for (std::uint32_t bits = 0; bits < 0x7C00; ++bits)    // every finite half survives the round trip
    ASSERT_EQ(float_to_f16(f16_to_float(static_cast<std::uint16_t>(bits))), bits);
}

// llama.cpp's reference quantisers: dequantising what they wrote gives the values back within the
// type's error on normal values (RMS error over RMS value, measured 0.006 for Q8_0 and 0.07 for
// Q4_K here; llama.cpp's own figures are alike), and constant blocks exactly.
TEST(Quantisers, RoundTripWithinTheTypesError) {
  std::mt19937 generator(7);
  std::normal_distribution<float> normal(0.0F, 1.0F);
  std::vector<float> values(4096);
  for (float& value : values) value = normal(generator);
  for (const auto& [dtype, limit] : {std::pair{DType::q8_0, 0.01}, std::pair{DType::q4_k, 0.1}}) {
    std::vector<std::byte> blocks(storage_bytes(dtype, values.size()));
    quant::quantize_row(dtype, values.data(), values.size(), blocks.data());
    std::vector<float> back(values.size());
    quant::dequantize_row(dtype, blocks.data(), back.size(), back.data());
    double error = 0.0, total = 0.0;
    for (std::size_t i = 0; i < values.size(); ++i) {
      error += (back[i] - values[i]) * (back[i] - values[i]);
      total += values[i] * values[i];
    }
    EXPECT_LT(std::sqrt(error / total), limit) << dtype_name(dtype);
    std::vector<float> zeros(256, 0.0F);
    quant::quantize_row(dtype, zeros.data(), zeros.size(), blocks.data());
    quant::dequantize_row(dtype, blocks.data(), zeros.size(), back.data());
    EXPECT_EQ(std::count(back.begin(), back.begin() + 256, 0.0F), 256) << dtype_name(dtype);
  }
}

TEST(OpErrors, AQuantisedMatmulTakesNoActivation) {
  for (const BackendEntry& entry : backends()) {
    if (!entry.available()) continue;
    const auto backend = entry.create();
    EXPECT_THROW(
        (void)backend->pack_matmul(Tensor::empty(DType::q8_0, {4, 32}), {}, Arithmetic::fp32, Activation::gelu),
        std::invalid_argument)
        << entry.name;
  }
}

}  // namespace
}  // namespace s1::backend
