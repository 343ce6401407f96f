#include "backend/reference/reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/quant_blocks.h"

namespace s1::backend::reference {
namespace {

void require(bool condition, const char* what) {
  if (!condition) throw std::invalid_argument(std::string("backend op: ") + what);
}

std::size_t columns_of(const Tensor& t) { return t.rank() == 1 ? 1 : t.dim(1); }

double silu(double x) { return x / (1.0 + std::exp(-x)); }
double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

double activated(Activation activation, double x) {
  switch (activation) {
    case Activation::none:
      return x;
    case Activation::gelu:
      return gelu(x);
    case Activation::relu:
      return x > 0.0 ? x : 0.0;
    case Activation::gelu_tanh:
      return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
  }
  return x;
}

std::int64_t index_at(const Tensor& t, std::size_t i) {
  require(t.dtype() == DType::i32 || t.dtype() == DType::i64, "indices must be i32 or i64");
  return t.dtype() == DType::i32 ? t.read<std::int32_t>()[i * t.stride(0)] : t.read<std::int64_t>()[i * t.stride(0)];
}

class ReferenceMatrix final : public PackedMatrix {
 public:
  ReferenceMatrix(std::vector<float> weight, std::vector<float> bias, std::size_t in, std::size_t out,
                  Activation activation)
      : weight_(std::move(weight)), bias_(std::move(bias)), in_(in), out_(out), activation_(activation) {}
  [[nodiscard]] std::size_t in_features() const override { return in_; }
  [[nodiscard]] std::size_t out_features() const override { return out_; }

  std::vector<float> weight_, bias_;
  std::size_t in_, out_;
  Activation activation_;
  bool bf16_ = false;
  bool quantized_ = false;  // x is quantised as quantised weights' matmuls quantise it
};

class ReferenceBackend final : public Backend {
 public:
  [[nodiscard]] std::string_view name() const override { return "reference"; }
  [[nodiscard]] Device device() const override { return Device::cpu; }
  [[nodiscard]] Tensor allocate(DType dtype, std::span<const std::size_t> shape) override {
    return Tensor::empty(dtype, shape);
  }
  [[nodiscard]] Tensor upload(const Tensor& host) override { return host; }
  [[nodiscard]] std::unique_ptr<PackedMatrix> pack_matmul(const Tensor& weight, const Tensor& bias,
                                                          Arithmetic arithmetic, Activation activation) override {
    return reference::pack_matmul(weight, bias, arithmetic, activation);
  }
  [[nodiscard]] bool supports(Arithmetic) const override { return true; }
  void matmul(const MatmulCall& call) override { reference::matmul(call); }
  void norm(const NormCall& call) override { reference::norm(call); }
  void rope(const RopeCall& call) override { reference::rope(call); }
  void attention(const AttentionCall& call) override { reference::attention(call); }
  void gated_delta_chunked(const GatedDeltaCall& call) override { reference::gated_delta_chunked(call); }
  void gated_delta_recurrent(const GatedDeltaCall& call) override { reference::gated_delta_recurrent(call); }
  void short_conv(const ShortConvCall& call) override { reference::short_conv(call); }
  void glu(const GluCall& call) override { reference::glu(call); }
  void activate(Activation activation, const Tensor& x, const Tensor& y) override {
    reference::activate(activation, x, y);
  }
  void embedding(const Tensor& table, const Tensor& ids, const Tensor& y) override {
    reference::embedding(table, ids, y);
  }
  void embedding_bag(const Tensor& table, const Tensor& ids, const Tensor& weights, const Tensor& y) override {
    reference::embedding_bag(table, ids, weights, y);
  }
  void gather_rows(const Tensor& x, const Tensor& rows, const Tensor& y) override {
    reference::gather_rows(x, rows, y);
  }
  void softmax_rows(const Tensor& x, const Tensor& rows, bool log, const Tensor& y) override {
    reference::softmax_rows(x, rows, log, y);
  }
};

}  // namespace

float load(const Tensor& t, std::size_t r, std::size_t c) {
  const std::size_t offset = r * t.stride(0) + (t.rank() == 1 ? 0 : c * t.stride(1));
  switch (t.dtype()) {
    case DType::fp32:
      return t.read<float>()[offset];
    case DType::bf16:
      return bf16_to_float(t.read<std::uint16_t>()[offset]);
    default:
      throw std::invalid_argument("backend op: values must be fp32 or bf16, not " + std::string(dtype_name(t.dtype())));
  }
}

void store(const Tensor& t, std::size_t r, std::size_t c, float value) {
  const std::size_t offset = r * t.stride(0) + (t.rank() == 1 ? 0 : c * t.stride(1));
  switch (t.dtype()) {
    case DType::fp32:
      t.data<float>()[offset] = value;
      return;
    case DType::bf16:
      t.data<std::uint16_t>()[offset] = float_to_bf16(value);
      return;
    default:
      throw std::invalid_argument("backend op: values must be fp32 or bf16, not " + std::string(dtype_name(t.dtype())));
  }
}

std::unique_ptr<Backend> create() { return std::make_unique<ReferenceBackend>(); }

std::unique_ptr<PackedMatrix> pack_matmul(const Tensor& weight, const Tensor& bias, Arithmetic arithmetic,
                                          Activation activation) {
  require(weight.rank() == 2, "a matmul weight is [out_features, in_features]");
  const std::size_t out = weight.dim(0), in = weight.dim(1);
  require(!bias.defined() || bias.elements() == out, "a matmul bias has out_features values");
  std::vector<float> w(out * in), b;
  if (quantized(weight.dtype())) {
    require(activation == Activation::none, "a quantised matmul takes no activation");
    const std::span<const std::byte> blocks = weight.read_bytes();
    quant::dequantize_row(weight.dtype(), blocks.data(), w.size(), w.data());
  }
  for (std::size_t r = 0; r < out && !quantized(weight.dtype()); ++r) {
    for (std::size_t c = 0; c < in; ++c) {
      const float value = load(weight, r, c);
      w[r * in + c] = arithmetic == Arithmetic::bf16 ? bf16_to_float(float_to_bf16(value)) : value;
    }
  }
  if (bias.defined()) {
    for (std::size_t i = 0; i < out; ++i) b.push_back(load(bias, i, 0));
  }
  auto packed = std::make_unique<ReferenceMatrix>(std::move(w), std::move(b), in, out, activation);
  packed->bf16_ = arithmetic == Arithmetic::bf16 && !quantized(weight.dtype());
  packed->quantized_ = quantized(weight.dtype());
  return packed;
}

void matmul(const MatmulCall& call) {
  const auto* w = dynamic_cast<const ReferenceMatrix*>(call.weight);
  require(w != nullptr, "the weight was not packed by this backend");
  require(call.x.rank() == 2 && call.x.dim(1) == w->in_ && call.y.rank() == 2 && call.y.dim(0) == call.x.dim(0) &&
              call.y.dim(1) == w->out_,
          "matmul x [M, in_features] and y [M, out_features]");
  require(!call.accumulate || (w->activation_ == Activation::none && call.y.dtype() == DType::fp32),
          "an accumulating matmul has no activation and an fp32 y");
  std::vector<double> x(w->in_);
  std::vector<float> values(w->in_);
  std::vector<std::int8_t> q(quant::activation_block_values);
  for (std::size_t m = 0; m < call.x.dim(0); ++m) {
    for (std::size_t k = 0; k < w->in_; ++k) {
      const float value = load(call.x, m, k);
      values[k] = value;
      x[k] = w->bf16_ ? bf16_to_float(float_to_bf16(value)) : value;
    }
    for (std::size_t k = 0; w->quantized_ && k < w->in_; k += quant::activation_block_values) {
      const float d = quant::quantize_activation_block(values.data() + k, q.data());
      for (std::size_t j = 0; j < q.size(); ++j) x[k + j] = static_cast<double>(q[j]) * d;
    }
    for (std::size_t n = 0; n < w->out_; ++n) {
      double sum = w->bias_.empty() ? 0.0 : w->bias_[n];
      const float* row = w->weight_.data() + n * w->in_;
      for (std::size_t k = 0; k < w->in_; ++k) sum += x[k] * row[k];
      sum = activated(w->activation_, sum);
      if (call.accumulate) sum += load(call.y, m, n);
      store(call.y, m, n, static_cast<float>(sum));
    }
  }
}

void norm(const NormCall& call) {
  const std::size_t rows = call.x.rows(), width = columns_of(call.x);
  require(call.weight.elements() == width && call.y.rows() == rows && columns_of(call.y) == width,
          "norm x and y [rows, width], weight [width]");
  std::vector<double> v(width);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < width; ++c)
      v[c] = static_cast<double>(load(call.x, r, c)) + (call.residual.defined() ? load(call.residual, r, c) : 0.0);
    double mean = 0.0, square = 0.0;
    for (const double value : v) mean += value;
    mean /= static_cast<double>(width);
    const bool layer = call.kind == NormCall::Kind::layer;
    for (const double value : v) square += layer ? (value - mean) * (value - mean) : value * value;
    const double inverse = 1.0 / std::sqrt(square / static_cast<double>(width) + call.eps);
    for (std::size_t c = 0; c < width; ++c) {
      double out = (layer ? v[c] - mean : v[c]) * inverse * load(call.weight, c, 0);
      if (layer && call.bias.defined()) out += load(call.bias, c, 0);
      if (call.kind == NormCall::Kind::rms_gated) out *= silu(load(call.gate, r, c));
      store(call.y, r, c, static_cast<float>(out));
    }
  }
}

void rope(const RopeCall& call) {
  const bool multimodal = !call.axes.empty();
  const std::size_t rows = call.x.rows();
  require(call.rotary_dim % 2 == 0 && call.rotary_dim <= call.head_dim &&
              call.positions.elements() == (multimodal ? 3 * rows : rows) &&
              columns_of(call.x) >= call.heads * call.head_dim,
          "rope rotary_dim even and ≤ head_dim, a position per row (three with axes)");
  const std::size_t half = call.rotary_dim / 2;
  require(!multimodal || (call.axes.size() == half && std::ranges::all_of(call.axes, [](std::uint8_t a) { return a < 3; })),
          "rope axes: one of 0, 1, 2 per rotary frequency");
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t j = 0; j < half; ++j) {
      const auto position =
          static_cast<float>(index_at(call.positions, multimodal ? call.axes[j] * rows + r : r));
      // fp32 throughout, as Transformers: inv_freq = 1 / θ^(2j/d), angle = position · inv_freq.
      const float exponent = static_cast<float>(2 * j) / static_cast<float>(call.rotary_dim);
      const float inverse_frequency = 1.0F / std::pow(call.theta, exponent);
      const float angle = position * inverse_frequency;
      const float cosine = std::cos(angle), sine = std::sin(angle);
      for (std::size_t h = 0; h < call.heads; ++h) {
        const std::size_t a = h * call.head_dim + j, b = a + half;
        const float x1 = load(call.x, r, a), x2 = load(call.x, r, b);
        store(call.x, r, a, x1 * cosine - x2 * sine);
        store(call.x, r, b, x2 * cosine + x1 * sine);
      }
    }
  }
}

void attention(const AttentionCall& call) {
  const std::size_t d = call.head_dim;
  require(call.heads > 0 && call.kv_heads > 0 && call.heads % call.kv_heads == 0,
          "attention heads a multiple of kv_heads");
  const std::size_t prefix = call.prefix_k.defined() ? call.prefix_k.rows() : 0;
  require(columns_of(call.q) == call.heads * d && columns_of(call.k) == call.kv_heads * d &&
              columns_of(call.v) == call.kv_heads * d && columns_of(call.out) == call.heads * d,
          "attention q/out [rows, heads·head_dim], k/v [rows, kv_heads·head_dim]");
  const std::size_t group = call.heads / call.kv_heads;
  std::vector<double> scores, sums(d);
  for (const AttentionSegment& segment : call.segments) {
    require(segment.offset + segment.length <= call.q.rows() && segment.offset + segment.length <= call.out.rows(),
            "attention segment outside the rows");
    const std::size_t keys = prefix + segment.length;
    for (std::size_t h = 0; h < call.heads; ++h) {
      const std::size_t kv = h / group;
      for (std::size_t t = 0; t < segment.length; ++t) {
        const std::size_t i = prefix + t, row = segment.offset + t;
        scores.assign(keys, -std::numeric_limits<double>::infinity());
        double best = -std::numeric_limits<double>::infinity();
        for (std::size_t j = 0; j < keys; ++j) {
          if (call.causal && j > i) continue;
          if (call.window != 0 && (i > j ? i - j : j - i) > call.window) continue;
          const Tensor& key = j < prefix ? call.prefix_k : call.k;
          const std::size_t key_row = j < prefix ? j : segment.offset + (j - prefix);
          double dot = 0.0;
          for (std::size_t c = 0; c < d; ++c)
            dot += static_cast<double>(load(call.q, row, h * d + c)) * load(key, key_row, kv * d + c);
          scores[j] = dot * call.scale;
          best = std::max(best, scores[j]);
        }
        std::fill(sums.begin(), sums.end(), 0.0);
        double total = 0.0;
        for (std::size_t j = 0; j < keys; ++j) {
          if (scores[j] == -std::numeric_limits<double>::infinity()) continue;
          const double p = std::exp(scores[j] - best);
          total += p;
          const Tensor& value = j < prefix ? call.prefix_v : call.v;
          const std::size_t value_row = j < prefix ? j : segment.offset + (j - prefix);
          for (std::size_t c = 0; c < d; ++c) sums[c] += p * load(value, value_row, kv * d + c);
        }
        for (std::size_t c = 0; c < d; ++c)
          store(call.out, row, h * d + c, total > 0.0 ? static_cast<float>(sums[c] / total) : 0.0F);
      }
    }
  }
}

namespace {

void check_gated_delta(const GatedDeltaCall& call) {
  const std::size_t rows = call.query.rows();
  require(call.k_heads > 0 && call.v_heads % call.k_heads == 0, "gated delta v_heads a multiple of k_heads");
  require(columns_of(call.query) == call.k_heads * call.k_dim && columns_of(call.key) == call.k_heads * call.k_dim &&
              call.key.rows() == rows && call.value.rows() == rows &&
              columns_of(call.value) == call.v_heads * call.v_dim && call.g.elements() == rows * call.v_heads &&
              call.beta.elements() == rows * call.v_heads && call.out.rows() == rows &&
              columns_of(call.out) == call.v_heads * call.v_dim,
          "gated delta query/key [rows, k_heads·k_dim], value/out [rows, v_heads·v_dim], g/beta [rows, v_heads]");
  const std::size_t state = call.v_heads * call.k_dim * call.v_dim;
  require(call.state.elements() == state && (!call.initial.defined() || call.initial.elements() == state),
          "gated delta state [v_heads, k_dim, v_dim]");
}

// The recurrence over every row from `state` (updated in place, in double).
void recur(const GatedDeltaCall& call, std::vector<double>& state) {
  const std::size_t dk = call.k_dim, dv = call.v_dim, group = call.v_heads / call.k_heads;
  const auto g = call.g.read_values<float>();
  const auto beta = call.beta.read_values<float>();
  std::vector<double> memory(dv);
  for (std::size_t t = 0; t < call.query.rows(); ++t) {
    for (std::size_t h = 0; h < call.v_heads; ++h) {
      double* s = state.data() + h * dk * dv;
      const std::size_t kh = h / group;
      const double decay = std::exp(static_cast<double>(g[t * call.v_heads + h]));
      for (std::size_t i = 0; i < dk * dv; ++i) s[i] *= decay;
      std::fill(memory.begin(), memory.end(), 0.0);
      for (std::size_t a = 0; a < dk; ++a) {
        const double k = load(call.key, t, kh * dk + a);
        for (std::size_t c = 0; c < dv; ++c) memory[c] += s[a * dv + c] * k;
      }
      for (std::size_t c = 0; c < dv; ++c) {
        const double delta = (load(call.value, t, h * dv + c) - memory[c]) * beta[t * call.v_heads + h];
        for (std::size_t a = 0; a < dk; ++a) s[a * dv + c] += load(call.key, t, kh * dk + a) * delta;
      }
      for (std::size_t c = 0; c < dv; ++c) {
        double sum = 0.0;
        for (std::size_t a = 0; a < dk; ++a) sum += s[a * dv + c] * load(call.query, t, kh * dk + a);
        store(call.out, t, h * dv + c, static_cast<float>(sum));
      }
    }
  }
}

}  // namespace

void gated_delta_chunked(const GatedDeltaCall& call) {
  check_gated_delta(call);
  std::vector<double> state(call.state.elements(), 0.0);
  if (call.initial.defined()) {
    const auto initial = call.initial.read_values<float>();
    std::copy(initial.begin(), initial.end(), state.begin());
  }
  recur(call, state);
  std::transform(state.begin(), state.end(), call.state.values<float>().begin(),
                 [](double s) { return static_cast<float>(s); });
}

void gated_delta_recurrent(const GatedDeltaCall& call) {
  check_gated_delta(call);
  const auto values = call.state.values<float>();
  std::vector<double> state(values.begin(), values.end());
  recur(call, state);
  std::transform(state.begin(), state.end(), values.begin(), [](double s) { return static_cast<float>(s); });
}

void short_conv(const ShortConvCall& call) {
  require(call.weight.rank() == 2, "short conv weight [channels, kernel]");
  const std::size_t channels = call.weight.dim(0), kernel = call.weight.dim(1), history = kernel - 1;
  const bool gated = call.kind == ShortConvCall::Kind::gated;
  const std::size_t rows = call.x.rows();
  require(columns_of(call.x) == (gated ? 3 : 1) * channels && call.y.rows() == rows && columns_of(call.y) == channels &&
              call.tail.elements() == history * channels && (!call.bias.defined() || call.bias.elements() == channels),
          "short conv x [rows, (3·)channels], y [rows, channels], tail [kernel − 1, channels]");
  // The conv's inputs, the tail's rows first: [history + rows, channels].
  std::vector<double> inputs((history + rows) * channels);
  const auto tail = call.tail.values<float>();
  std::copy(tail.begin(), tail.end(), inputs.begin());
  for (std::size_t t = 0; t < rows; ++t) {
    for (std::size_t c = 0; c < channels; ++c) {
      inputs[(history + t) * channels + c] =
          gated ? static_cast<double>(load(call.x, t, c)) * load(call.x, t, 2 * channels + c) : load(call.x, t, c);
    }
  }
  for (std::size_t t = 0; t < rows; ++t) {
    for (std::size_t c = 0; c < channels; ++c) {
      double sum = call.bias.defined() ? load(call.bias, c, 0) : 0.0;
      for (std::size_t j = 0; j < kernel; ++j) sum += load(call.weight, c, j) * inputs[(t + j) * channels + c];
      store(call.y, t, c, static_cast<float>(gated ? load(call.x, t, channels + c) * sum : silu(sum)));
    }
  }
  for (std::size_t i = 0; i < history * channels; ++i) tail[i] = static_cast<float>(inputs[rows * channels + i]);
}

void activate(Activation activation, const Tensor& x, const Tensor& y) {
  require(x.dtype() == DType::fp32 && y.dtype() == DType::fp32 && x.rows() == y.rows() &&
              x.row_size() == y.row_size() && y.contiguous() && x.contiguous(),
          "activate x and y fp32 of one shape");
  const auto in = x.read_values<float>();
  const auto out = y.values<float>();
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = static_cast<float>(activated(activation, in[i]));
}

void glu(const GluCall& call) {
  const std::size_t width = columns_of(call.y);
  require(call.x.rows() == call.y.rows() && columns_of(call.x) == 2 * width, "glu x [rows, 2·width], y [rows, width]");
  for (std::size_t r = 0; r < call.x.rows(); ++r) {
    for (std::size_t c = 0; c < width; ++c) {
      const double a = load(call.x, r, c), b = load(call.x, r, width + c);
      store(call.y, r, c, static_cast<float>((call.kind == GluCall::Kind::swiglu ? silu(a) : gelu(a)) * b));
    }
  }
}

void embedding(const Tensor& table, const Tensor& ids, const Tensor& y) {
  const std::size_t width = columns_of(table);
  require(y.rows() == ids.elements() && columns_of(y) == width, "embedding y [ids, width]");
  for (std::size_t i = 0; i < ids.elements(); ++i) {
    const std::int64_t id = index_at(ids, i);
    if (id < 0 || static_cast<std::size_t>(id) >= table.rows())
      throw std::out_of_range("embedding: token id " + std::to_string(id) + " outside a table of " +
                              std::to_string(table.rows()) + " rows");
    for (std::size_t c = 0; c < width; ++c) store(y, i, c, load(table, static_cast<std::size_t>(id), c));
  }
}

void embedding_bag(const Tensor& table, const Tensor& ids, const Tensor& weights, const Tensor& y) {
  const std::size_t width = columns_of(table);
  require(ids.rank() == 2 && ids.dtype() == DType::i32 && weights.dtype() == DType::fp32 && ids.contiguous() &&
              weights.contiguous() && weights.elements() == ids.elements() && y.dtype() == DType::fp32 &&
              y.rows() == ids.rows() && columns_of(y) == width,
          "embedding_bag ids [rows, taps] i32, weights [rows, taps] fp32, y [rows, width] fp32");
  const auto id = ids.read_values<std::int32_t>();
  const auto w = weights.read_values<float>();
  for (const std::int32_t row : id) {
    if (row < 0 || static_cast<std::size_t>(row) >= table.rows())
      throw std::out_of_range("embedding_bag: id " + std::to_string(row) + " outside a table of " +
                              std::to_string(table.rows()) + " rows");
  }
  const std::size_t taps = ids.dim(1);
  for (std::size_t i = 0; i < ids.rows(); ++i) {
    for (std::size_t c = 0; c < width; ++c) {
      double sum = 0.0;
      for (std::size_t t = 0; t < taps; ++t)
        sum += static_cast<double>(w[i * taps + t]) * load(table, static_cast<std::size_t>(id[i * taps + t]), c);
      store(y, i, c, static_cast<float>(sum));
    }
  }
}

void gather_rows(const Tensor& x, const Tensor& rows, const Tensor& y) {
  const std::size_t width = columns_of(x);
  require(y.dtype() == x.dtype() && y.rows() == rows.elements() && columns_of(y) == width,
          "gather_rows y [rows, width] of x's dtype");
  for (std::size_t i = 0; i < rows.elements(); ++i) {
    const std::int64_t row = index_at(rows, i);
    if (row < 0 || static_cast<std::size_t>(row) >= x.rows()) throw std::out_of_range("gather_rows: row out of range");
    for (std::size_t c = 0; c < width; ++c) store(y, i, c, load(x, static_cast<std::size_t>(row), c));
  }
}

void softmax_rows(const Tensor& x, const Tensor& rows, bool log, const Tensor& y) {
  const std::size_t columns = columns_of(x), count = rows.defined() ? rows.elements() : x.rows();
  require(y.rows() == count && columns_of(y) == columns, "softmax_rows y [rows, columns]");
  for (std::size_t i = 0; i < count; ++i) {
    const std::int64_t row = rows.defined() ? index_at(rows, i) : static_cast<std::int64_t>(i);
    if (row < 0 || static_cast<std::size_t>(row) >= x.rows()) throw std::out_of_range("softmax_rows: row out of range");
    const auto r = static_cast<std::size_t>(row);
    double best = -std::numeric_limits<double>::infinity(), total = 0.0;
    for (std::size_t c = 0; c < columns; ++c) best = std::max<double>(best, load(x, r, c));
    for (std::size_t c = 0; c < columns; ++c) total += std::exp(load(x, r, c) - best);
    for (std::size_t c = 0; c < columns; ++c) {
      const double shifted = load(x, r, c) - best;
      store(y, i, c, static_cast<float>(log ? shifted - std::log(total) : std::exp(shifted) / total));
    }
  }
}

}  // namespace s1::backend::reference
