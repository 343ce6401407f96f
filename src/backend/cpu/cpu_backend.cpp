#include "backend/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/cpu/attention.h"
#include "backend/cpu/cached_attention.h"
#include "backend/cpu/gated_delta.h"
#include "backend/cpu/gelu.h"
#include "backend/cpu/layer_norm.h"
#include "backend/cpu/linear.h"
#include "backend/cpu/rms_norm.h"
#include "backend/cpu/rope.h"
#include "backend/cpu/short_conv.h"
#include "backend/cpu/softmax.h"
#include "backend/cpu/swiglu.h"
#include "backend/reference/reference.h"

namespace s1::backend::cpu {
namespace {

// The values a row-strided 2-d tensor's rows cover: row r at data + r·stride(0), row_size values
// each; the span ends after the last row's values.
template <class T>
std::span<const T> strided_read(const Tensor& t) {
  if (t.rows() == 0) return {};
  return {t.read<T>(), (t.rows() - 1) * t.stride(0) + t.row_size()};
}

bool rows_strided_only(const Tensor& t) { return t.rank() == 2 && t.stride(1) == 1; }

std::span<const Bf16Bits> bf16_read(const Tensor& t) { return t.read_values<std::uint16_t>(); }
std::span<Bf16Bits> bf16_write(const Tensor& t) { return t.values<std::uint16_t>(); }

Precision precision_of(Arithmetic arithmetic) {
  return arithmetic == Arithmetic::bf16 ? Precision::bf16 : Precision::fp32;
}

class CpuMatrix final : public PackedMatrix {
 public:
  CpuMatrix(PackedLinear linear, backend::Activation after) : linear_(std::move(linear)), after_(after) {}
  [[nodiscard]] std::size_t in_features() const override { return linear_.in_features(); }
  [[nodiscard]] std::size_t out_features() const override { return linear_.out_features(); }
  PackedLinear linear_;
  // PackedLinear's epilogues are oneDNN's and our AMX kernel's GELU; ReLU (a small head's, never a
  // hot path) runs on y after the product, which commutes with rounding to bf16. GELU-tanh (the
  // vision towers' MLP) also runs after, on fp32 values (a bf16 y is rounded after it).
  backend::Activation after_;
};

// torch's gelu(approximate="tanh") in fp32.
float gelu_tanh(float x) {
  constexpr float sqrt_2_over_pi = 0.7978845608028654F;
  return 0.5F * x * (1.0F + std::tanh(sqrt_2_over_pi * (x + 0.044715F * x * x * x)));
}

void relu_in_place(const Tensor& y) {
  if (y.dtype() == DType::bf16) {
    for (std::uint16_t& bits : y.values<std::uint16_t>()) bits = (bits & 0x8000U) != 0 ? 0 : bits;
  } else {
    for (float& value : y.values<float>()) value = value > 0.0F ? value : 0.0F;
  }
}

std::vector<float> as_floats(const Tensor& t) {
  std::vector<float> values(t.elements());
  if (t.dtype() == DType::fp32) {
    const auto source = t.read_values<float>();
    std::copy(source.begin(), source.end(), values.begin());
  } else {
    const auto source = bf16_read(t);
    std::transform(source.begin(), source.end(), values.begin(), bf16_to_fp32);
  }
  return values;
}

// y = x·Wᵀ (+ y) in the packed linear's arithmetic, widening or rounding the call's dtypes.
void product(const PackedLinear& linear, const MatmulCall& call) {
  if (call.x.rows() != call.y.rows() || call.x.row_size() != linear.in_features() ||
      call.y.row_size() != linear.out_features())
    throw std::invalid_argument("backend op: matmul x [M, in_features] and y [M, out_features]");
  const bool bf16 = linear.precision() == Precision::bf16;
  const bool x_bf16 = call.x.dtype() == DType::bf16, y_bf16 = call.y.dtype() == DType::bf16;
  if (call.accumulate && y_bf16) throw std::invalid_argument("backend op: an accumulating matmul has an fp32 y");
  // fp32 arithmetic reads and writes fp32: bf16 operands are widened, a bf16 y rounded after.
  if (!bf16 && (x_bf16 || y_bf16)) {
    const std::vector<float> x = as_floats(call.x);
    std::vector<float> y = call.accumulate ? as_floats(call.y) : std::vector<float>(call.y.elements());
    call.accumulate ? linear.forward_accumulate(x, y) : linear.forward(x, y);
    if (y_bf16)
      convert_fp32_to_bf16(y, bf16_write(call.y));
    else
      std::copy(y.begin(), y.end(), call.y.values<float>().begin());
    return;
  }
  if (call.accumulate) {
    if (x_bf16)
      linear.forward_accumulate(bf16_read(call.x), call.y.values<float>());
    else
      linear.forward_accumulate(call.x.read_values<float>(), call.y.values<float>());
  } else if (x_bf16) {
    if (y_bf16)
      linear.forward(bf16_read(call.x), bf16_write(call.y));
    else
      linear.forward(bf16_read(call.x), call.y.values<float>());
  } else if (y_bf16) {
    linear.forward(call.x.read_values<float>(), bf16_write(call.y));
  } else {
    linear.forward(call.x.read_values<float>(), call.y.values<float>());
  }
}

class CpuBackend final : public Backend {
 public:
  [[nodiscard]] std::string_view name() const override { return "cpu"; }
  [[nodiscard]] Device device() const override { return Device::cpu; }
  [[nodiscard]] Tensor allocate(DType dtype, std::span<const std::size_t> shape) override {
    return Tensor::empty(dtype, shape);
  }
  [[nodiscard]] Tensor upload(const Tensor& host) override { return host; }
  [[nodiscard]] bool supports(Arithmetic arithmetic) const override {
    return linear_supported(precision_of(arithmetic));
  }

  [[nodiscard]] std::unique_ptr<PackedMatrix> pack_matmul(const Tensor& weight, const Tensor& bias,
                                                          Arithmetic arithmetic,
                                                          backend::Activation activation) override {
    if (weight.rank() != 2) throw std::invalid_argument("backend op: a matmul weight is [out_features, in_features]");
    if (quantized(weight.dtype())) {
      if (activation != backend::Activation::none)
        throw std::invalid_argument("backend op: a quantised matmul takes no activation");
      const std::vector<float> b = bias.defined() ? as_floats(bias) : std::vector<float>{};
      // bf16 precision: its overloads take fp32 and bf16 rows alike straight to the kernel (rows are
      // quantised from either, and a bf16 y is written by the kernel).
      return std::make_unique<CpuMatrix>(
          PackedLinear(weight.dtype(), weight.read_bytes(), b, weight.dim(1), weight.dim(0), Precision::bf16),
          backend::Activation::none);
    }
    if (!supports(arithmetic)) throw std::invalid_argument("cpu backend: no bf16 matmul on this CPU (no AVX-512)");
    // PackedLinear reorders (and, at bf16, rounds) from fp32; the fp32 copy lives only for the call.
    const std::vector<float> w = as_floats(weight);
    const std::vector<float> b = bias.defined() ? as_floats(bias) : std::vector<float>{};
    return std::make_unique<CpuMatrix>(
        PackedLinear(w, b, weight.dim(1), weight.dim(0), precision_of(arithmetic),
                     activation == backend::Activation::gelu ? cpu::Activation::gelu : cpu::Activation::none),
        activation == backend::Activation::gelu ? backend::Activation::none : activation);
  }

  void matmul(const MatmulCall& call) override {
    const auto* packed = dynamic_cast<const CpuMatrix*>(call.weight);
    if (packed == nullptr) throw std::invalid_argument("backend op: the weight was not packed by this backend");
    if (packed->after_ != backend::Activation::none && call.accumulate)
      throw std::invalid_argument("backend op: an accumulating matmul has no activation");
    if (packed->after_ == backend::Activation::gelu_tanh) {
      const bool y_bf16 = call.y.dtype() == DType::bf16;
      const Tensor y = y_bf16 ? Tensor::empty(DType::fp32, {call.y.rows(), call.y.row_size()}) : call.y;
      product(packed->linear_, MatmulCall{.x = call.x, .weight = call.weight, .accumulate = false, .y = y});
      for (float& value : y.values<float>()) value = gelu_tanh(value);
      if (y_bf16) convert_fp32_to_bf16(y.read_values<float>(), bf16_write(call.y));
      return;
    }
    product(packed->linear_, call);
    if (packed->after_ == backend::Activation::relu) relu_in_place(call.y);
  }

  void activate(backend::Activation activation, const Tensor& x, const Tensor& y) override {
    if (activation != backend::Activation::gelu || x.dtype() != DType::fp32 || y.dtype() != DType::fp32 ||
        x.elements() != y.elements()) {
      backend::reference::activate(activation, x, y);
      return;
    }
    gelu(x.read_values<float>(), y.values<float>());
  }

  void norm(const NormCall& call) override {
    const bool y_bf16 = call.y.dtype() == DType::bf16;
    const auto x = call.x.read_values<float>();
    const auto weight = call.weight.read_values<float>();
    if (call.x.elements() != call.y.elements() || call.x.row_size() != weight.size())
      throw std::invalid_argument("backend op: norm x and y [rows, width], weight [width]");
    switch (call.kind) {
      case NormCall::Kind::rms:
        if (call.residual.defined()) break;
        if (y_bf16)
          rms_norm_to_bf16(x, weight, call.eps, bf16_write(call.y));
        else
          rms_norm(x, weight, call.eps, call.y.values<float>());
        return;
      case NormCall::Kind::rms_gated:
        if (call.residual.defined()) break;
        if (y_bf16)
          gated_rms_norm_to_bf16(x, call.gate.read_values<float>(), weight, call.eps, bf16_write(call.y));
        else
          gated_rms_norm(x, call.gate.read_values<float>(), weight, call.eps, call.y.values<float>());
        return;
      case NormCall::Kind::layer: {
        const std::vector<float> zeros(call.bias.defined() ? 0 : weight.size(), 0.0F);
        const std::span<const float> bias = call.bias.defined() ? call.bias.read_values<float>() : zeros;
        if (call.residual.defined()) {
          if (y_bf16) break;
          add_layer_norm(x, call.residual.read_values<float>(), weight, bias, call.eps, call.y.values<float>());
        } else if (y_bf16) {
          layer_norm_to_bf16(x, weight, bias, call.eps, bf16_write(call.y));
        } else {
          layer_norm(x, weight, bias, call.eps, call.y.values<float>());
        }
        return;
      }
    }
    backend::reference::norm(call);  // a residual RMSNorm or a bf16 Add & Norm: no fused kernel for these
  }

  void rope(const RopeCall& call) override {
    if (!rows_strided_only(call.x) || call.x.dtype() != DType::fp32 || call.positions.dtype() != DType::i64 ||
        call.rotary_dim == 0) {
      backend::reference::rope(call);
      return;
    }
    const std::span<const float> rows = strided_read<float>(call.x);
    if (!call.axes.empty()) {
      if (call.axes.size() != call.rotary_dim / 2 || call.positions.elements() != 3 * call.x.rows() ||
          std::ranges::any_of(call.axes, [](std::uint8_t a) { return a > 2; })) {
        backend::reference::rope(call);  // refuses the call with the reference's message
        return;
      }
      apply_mrope(std::span(call.x.data<float>(), rows.size()), call.x.rows(), call.x.stride(0), call.heads,
                  call.head_dim, call.rotary_dim, call.axes, call.positions.read_values<std::int64_t>(), call.theta);
      return;
    }
    apply_rope(std::span(call.x.data<float>(), rows.size()), call.x.rows(), call.x.stride(0), call.heads, call.head_dim,
               call.rotary_dim, call.positions.read_values<std::int64_t>(), call.theta);
  }

  void attention(const AttentionCall& call) override {
    const bool prefix = call.prefix_k.defined();
    const bool kernel_shapes = rows_strided_only(call.q) && rows_strided_only(call.k) && rows_strided_only(call.v) &&
                               call.k.stride(0) == call.v.stride(0) && call.q.dtype() == DType::fp32 &&
                               call.k.dtype() == DType::fp32 && call.v.dtype() == DType::fp32 &&
                               call.out.contiguous() &&
                               (!prefix || (call.prefix_k.contiguous() && call.prefix_v.contiguous()));
    if (!kernel_shapes) {
      backend::reference::attention(call);
      return;
    }
    // An encoder's packed batch (no prefix, bidirectional, one fused [q | k | v] projection) runs on
    // the encoder kernel, the only one with a sliding window (ModernBERT's local layers).
    const std::size_t width = call.heads * call.head_dim;
    const float* q = call.q.read<float>();
    const bool fused = call.heads == call.kv_heads && call.q.stride(0) == 3 * width &&
                       call.k.read<float>() == q + width && call.v.read<float>() == q + 2 * width;
    if (!prefix && !call.causal && fused && call.out.dtype() == DType::fp32 &&
        call.scale == 1.0F / std::sqrt(static_cast<float>(call.head_dim))) {
      std::vector<PackedSequence> layout;
      for (const AttentionSegment& segment : call.segments) layout.push_back({segment.offset, segment.length});
      packed_attention(layout, std::span<const float>(q, call.q.rows() * 3 * width), call.heads, call.head_dim,
                       call.window, call.out.values<float>(), precision_of(call.arithmetic));
      return;
    }
    // The decoder kernel has no window.
    if (call.window != 0) {
      backend::reference::attention(call);
      return;
    }
    std::vector<AttentionBranch> branches;
    for (const AttentionSegment& segment : call.segments) branches.push_back({segment.offset, segment.length});
    const CachedAttentionShape shape{.heads = call.heads,
                                     .kv_heads = call.kv_heads,
                                     .head_dim = call.head_dim,
                                     .scale = call.scale,
                                     .precision = precision_of(call.arithmetic)};
    const CachedAttentionBranches a{
        .q = strided_read<float>(call.q),
        .q_stride = call.q.stride(0),
        .prefix_keys = prefix ? call.prefix_k.read_values<float>() : std::span<const float>{},
        .prefix_values = prefix ? call.prefix_v.read_values<float>() : std::span<const float>{},
        .prefix_length = prefix ? call.prefix_k.rows() : 0,
        .keys = strided_read<float>(call.k),
        .values = strided_read<float>(call.v),
        .kv_stride = call.k.stride(0),
        .branches = branches,
        .causal = call.causal,
        .shape = shape,
    };
    if (call.out.dtype() == DType::bf16) {
      cached_attention_branches(a, bf16_write(call.out));
    } else {
      cached_attention_branches(a.q, a.q_stride, a.prefix_keys, a.prefix_values, a.prefix_length, a.keys, a.values,
                                a.kv_stride, a.branches, a.causal, a.shape, call.out.values<float>());
    }
  }

  void gated_delta_chunked(const GatedDeltaCall& call) override {
    if (!rows_strided_only(call.value) || !call.query.contiguous() || !call.key.contiguous()) {
      backend::reference::gated_delta_chunked(call);
      return;
    }
    const GatedDeltaInputs inputs{.query = call.query.read_values<float>(),
                                  .key = call.key.read_values<float>(),
                                  .value = strided_read<float>(call.value),
                                  .value_stride = call.value.stride(0),
                                  .g = call.g.read_values<float>(),
                                  .beta = call.beta.read_values<float>(),
                                  .rows = call.query.rows()};
    const GatedDeltaShape shape{
        .k_heads = call.k_heads, .v_heads = call.v_heads, .k_dim = call.k_dim, .v_dim = call.v_dim};
    gated_delta_rule(inputs, shape, call.first_position, call.chunk_size,
                     call.initial.defined() ? call.initial.read_values<float>() : std::span<const float>{},
                     call.state.values<float>(), call.out.values<float>());
  }

  // A decode step is O(heads·k_dim·v_dim) per token, small beside its projections: no kernel yet.
  void gated_delta_recurrent(const GatedDeltaCall& call) override { backend::reference::gated_delta_recurrent(call); }

  void short_conv(const ShortConvCall& call) override {
    const std::size_t kernel = call.weight.rank() == 2 ? call.weight.dim(1) : 0;
    if (call.kind == ShortConvCall::Kind::gated) {
      gated_short_conv(call.x.read_values<float>(), call.x.rows(), call.weight.read_values<float>(), kernel,
                       call.bias.defined() ? call.bias.read_values<float>() : std::span<const float>{},
                       call.tail.values<float>(), call.y.values<float>());
      return;
    }
    if (!rows_strided_only(call.x)) {
      backend::reference::short_conv(call);
      return;
    }
    causal_conv1d_silu(strided_read<float>(call.x), call.x.rows(), call.x.stride(0), call.weight.read_values<float>(),
                       kernel, call.tail.values<float>(), call.y.values<float>());
  }

  void glu(const GluCall& call) override {
    const std::size_t width = call.y.row_size();
    const bool x_bf16 = call.x.dtype() == DType::bf16, y_bf16 = call.y.dtype() == DType::bf16;
    const bool swiglu_kind = call.kind == GluCall::Kind::swiglu;
    if (call.x.row_size() != 2 * width || call.x.rows() != call.y.rows())
      throw std::invalid_argument("backend op: glu x [rows, 2·width], y [rows, width]");
    if (x_bf16 && !y_bf16) {
      backend::reference::glu(call);  // no kernel widens bf16 rows into an fp32 activation
    } else if (x_bf16) {
      swiglu_kind ? swiglu_to_bf16(bf16_read(call.x), width, bf16_write(call.y))
                  : geglu_to_bf16(bf16_read(call.x), width, bf16_write(call.y));
    } else if (y_bf16) {
      swiglu_kind ? swiglu_to_bf16(call.x.read_values<float>(), width, bf16_write(call.y))
                  : geglu_to_bf16(call.x.read_values<float>(), width, bf16_write(call.y));
    } else {
      swiglu_kind ? swiglu(call.x.read_values<float>(), width, call.y.values<float>())
                  : geglu(call.x.read_values<float>(), width, call.y.values<float>());
    }
  }

  // Copies with no arithmetic to speed up: the reference definitions.
  void embedding(const Tensor& table, const Tensor& ids, const Tensor& y) override {
    backend::reference::embedding(table, ids, y);
  }
  void gather_rows(const Tensor& x, const Tensor& rows, const Tensor& y) override {
    backend::reference::gather_rows(x, rows, y);
  }
  // A vision tower's position grid: four taps per patch, once per image, small beside its matmuls.
  void embedding_bag(const Tensor& table, const Tensor& ids, const Tensor& weights, const Tensor& y) override {
    backend::reference::embedding_bag(table, ids, weights, y);
  }

  void softmax_rows(const Tensor& x, const Tensor& rows, bool log, const Tensor& y) override {
    if (log || rows.defined() || x.dtype() != DType::fp32 || y.dtype() != DType::fp32) {
      backend::reference::softmax_rows(x, rows, log, y);
      return;
    }
    softmax(x.read_values<float>(), x.row_size(), y.values<float>());
  }
};

}  // namespace

std::unique_ptr<Backend> create_backend() { return std::make_unique<CpuBackend>(); }

bool backend_available() { return true; }

}  // namespace s1::backend::cpu
