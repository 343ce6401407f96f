#include "backend/cpu/reference/gated_delta.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

namespace s1::backend::cpu::reference {
namespace {

double silu(double v) { return v / (1.0 + std::exp(-v)); }

}  // namespace

void causal_conv1d_silu(std::span<const float> x, std::size_t rows, std::size_t x_stride,
                        std::span<const float> weight, std::size_t kernel, std::span<float> tail,
                        std::span<float> y, std::size_t channel_begin, std::size_t channel_end) {
  const std::size_t channels = weight.size() / kernel;
  const std::size_t history = kernel - 1;
  assert(kernel >= 1 && tail.size() == history * channels && y.size() >= rows * channels);
  assert(rows == 0 || x.size() >= (rows - 1) * x_stride + channels);
  // Input row s of the padded sequence: s < 0 reads the carried tail.
  const auto input = [&](std::ptrdiff_t s, std::size_t c) -> float {
    if (s < 0) return tail[static_cast<std::size_t>(static_cast<std::ptrdiff_t>(history) + s) * channels + c];
    return x[static_cast<std::size_t>(s) * x_stride + c];
  };
  for (std::size_t c = channel_begin; c < channel_end; ++c) {
    const float* w = weight.data() + c * kernel;
    for (std::size_t t = 0; t < rows; ++t) {
      double sum = 0.0;
      for (std::size_t j = 0; j < kernel; ++j) {
        const std::ptrdiff_t s = static_cast<std::ptrdiff_t>(t + j) - static_cast<std::ptrdiff_t>(history);
        sum += static_cast<double>(w[j]) * static_cast<double>(input(s, c));
      }
      // torch rounds the conv output to fp32 before its SiLU.
      y[t * channels + c] = static_cast<float>(silu(static_cast<float>(sum)));
    }
    // New tail row i = padded row rows − history + i; reading tail rows above i, so ascending i never
    // overwrites a row still to be read.
    for (std::size_t i = 0; i < history; ++i) {
      tail[i * channels + c] = input(static_cast<std::ptrdiff_t>(rows + i) - static_cast<std::ptrdiff_t>(history), c);
    }
  }
}

void l2_norm_scaled(std::span<const float> x, std::size_t dim, float eps, float scale, std::span<float> y) {
  assert(dim > 0 && x.size() % dim == 0 && y.size() == x.size());
  for (std::size_t row = 0; row < x.size() / dim; ++row) {
    const float* in = x.data() + row * dim;
    float* out = y.data() + row * dim;
    double squares = 0.0;
    for (std::size_t i = 0; i < dim; ++i) squares += static_cast<double>(in[i]) * in[i];
    const auto inverse = static_cast<float>(1.0 / std::sqrt(static_cast<double>(static_cast<float>(squares) + eps)));
    for (std::size_t i = 0; i < dim; ++i) out[i] = (in[i] * inverse) * scale;
  }
}

void gated_rms_norm(std::span<const float> x, std::span<const float> gate, std::span<const float> weight, float eps,
                    std::span<float> y) {
  const std::size_t width = weight.size();
  assert(width > 0 && x.size() % width == 0 && gate.size() == x.size() && y.size() == x.size());
  for (std::size_t row = 0; row < x.size() / width; ++row) {
    const float* in = x.data() + row * width;
    const float* z = gate.data() + row * width;
    float* out = y.data() + row * width;
    double squares = 0.0;
    for (std::size_t i = 0; i < width; ++i) squares += static_cast<double>(in[i]) * in[i];
    const auto mean = static_cast<float>(squares / static_cast<double>(width));
    const auto inverse = static_cast<float>(1.0 / std::sqrt(static_cast<double>(mean + eps)));
    for (std::size_t i = 0; i < width; ++i) {
      out[i] = (weight[i] * (in[i] * inverse)) * static_cast<float>(silu(z[i]));
    }
  }
}

void gated_delta_rule_head(const GatedDeltaInputs& inputs, GatedDeltaShape shape, std::size_t head,
                           std::size_t first_position, std::size_t chunk_size, std::span<float> head_state,
                           std::span<float> out) {
  const std::size_t dk = shape.k_dim;
  const std::size_t dv = shape.v_dim;
  const std::size_t key_head = head / (shape.v_heads / shape.k_heads);
  const std::size_t qk_stride = shape.k_heads * dk;
  const std::size_t out_stride = shape.v_heads * dv;
  assert(chunk_size > 0 && head_state.size() == dk * dv);
  const auto q = [&](std::size_t t) { return inputs.query.data() + t * qk_stride + key_head * dk; };
  const auto k = [&](std::size_t t) { return inputs.key.data() + t * qk_stride + key_head * dk; };
  const auto v = [&](std::size_t t) { return inputs.value.data() + t * inputs.value_stride + head * dv; };
  const auto dot = [](const float* a, const float* b, std::size_t n) {
    double sum = 0.0;
    for (std::size_t i = 0; i < n; ++i) sum += static_cast<double>(a[i]) * b[i];
    return sum;
  };

  // Within a chunk everything is in double; the state between chunks stays fp32 as upstream's.
  std::vector<double> state(head_state.begin(), head_state.end());
  std::vector<double> decay;       // cumulative log decay within the chunk
  std::vector<double> tri;         // A[i][j] = β_i (k_i·k_j) exp(decay_i − decay_j), j < i
  std::vector<double> new_values;  // U − W·S: [L, dv]
  std::vector<double> keys_w;      // W = (I + A)⁻¹ (β k exp(decay)): [L, dk]
  std::vector<double> row(dv);
  for (std::size_t start = 0; start < inputs.rows;) {
    const std::size_t position = first_position + start;
    const std::size_t length = std::min(chunk_size - position % chunk_size, inputs.rows - start);
    decay.assign(length, 0.0);
    double running = 0.0;
    for (std::size_t i = 0; i < length; ++i) {
      running += inputs.g[(start + i) * shape.v_heads + head];
      decay[i] = running;
    }
    tri.assign(length * length, 0.0);
    for (std::size_t i = 0; i < length; ++i) {
      const double beta = inputs.beta[(start + i) * shape.v_heads + head];
      for (std::size_t j = 0; j < i; ++j) {
        tri[i * length + j] = beta * dot(k(start + i), k(start + j), dk) * std::exp(decay[i] - decay[j]);
      }
    }
    // Forward substitution through the unit lower-triangular system (I + A).
    new_values.assign(length * dv, 0.0);
    keys_w.assign(length * dk, 0.0);
    for (std::size_t i = 0; i < length; ++i) {
      const double beta = inputs.beta[(start + i) * shape.v_heads + head];
      const double gain = beta * std::exp(decay[i]);
      double* u = new_values.data() + i * dv;
      double* w = keys_w.data() + i * dk;
      for (std::size_t c = 0; c < dv; ++c) u[c] = beta * v(start + i)[c];
      for (std::size_t a = 0; a < dk; ++a) w[a] = gain * k(start + i)[a];
      for (std::size_t j = 0; j < i; ++j) {
        const double coefficient = tri[i * length + j];
        for (std::size_t c = 0; c < dv; ++c) u[c] -= coefficient * new_values[j * dv + c];
        for (std::size_t a = 0; a < dk; ++a) w[a] -= coefficient * keys_w[j * dk + a];
      }
    }
    // The part of each value the carried state already predicts is not written again (delta rule).
    for (std::size_t i = 0; i < length; ++i) {
      for (std::size_t a = 0; a < dk; ++a) {
        const double wa = keys_w[i * dk + a];
        for (std::size_t c = 0; c < dv; ++c) new_values[i * dv + c] -= wa * state[a * dv + c];
      }
    }
    for (std::size_t i = 0; i < length; ++i) {
      float* o = out.data() + (start + i) * out_stride + head * dv;
      const double read_gain = std::exp(decay[i]);
      std::fill(row.begin(), row.end(), 0.0);
      for (std::size_t a = 0; a < dk; ++a) {
        const double qa = read_gain * q(start + i)[a];
        for (std::size_t c = 0; c < dv; ++c) row[c] += qa * state[a * dv + c];
      }
      for (std::size_t j = 0; j <= i; ++j) {
        const double weight = dot(q(start + i), k(start + j), dk) * std::exp(decay[i] - decay[j]);
        for (std::size_t c = 0; c < dv; ++c) row[c] += weight * new_values[j * dv + c];
      }
      for (std::size_t c = 0; c < dv; ++c) o[c] = static_cast<float>(row[c]);
    }
    const double last = decay[length - 1];
    const double chunk_decay = std::exp(last);
    for (double& s : state) s *= chunk_decay;
    for (std::size_t j = 0; j < length; ++j) {
      const double key_gain = std::exp(last - decay[j]);
      for (std::size_t a = 0; a < dk; ++a) {
        const double ka = key_gain * k(start + j)[a];
        for (std::size_t c = 0; c < dv; ++c) state[a * dv + c] += ka * new_values[j * dv + c];
      }
    }
    // Round at each chunk boundary, where upstream's fp32 state lives.
    for (double& s : state) s = static_cast<float>(s);
    start += length;
  }
  for (std::size_t i = 0; i < state.size(); ++i) head_state[i] = static_cast<float>(state[i]);
}

void gated_delta_rule_recurrent(const GatedDeltaInputs& inputs, GatedDeltaShape shape, std::span<float> state,
                                std::span<float> out) {
  const std::size_t dk = shape.k_dim;
  const std::size_t dv = shape.v_dim;
  const std::size_t group = shape.v_heads / shape.k_heads;
  const std::size_t qk_stride = shape.k_heads * dk;
  const std::size_t out_stride = shape.v_heads * dv;
  assert(state.size() == shape.v_heads * dk * dv);
  std::vector<double> memory(dv);
  for (std::size_t h = 0; h < shape.v_heads; ++h) {
    float* s = state.data() + h * dk * dv;
    for (std::size_t t = 0; t < inputs.rows; ++t) {
      const float* q = inputs.query.data() + t * qk_stride + (h / group) * dk;
      const float* k = inputs.key.data() + t * qk_stride + (h / group) * dk;
      const float* v = inputs.value.data() + t * inputs.value_stride + h * dv;
      const auto decay = static_cast<float>(std::exp(static_cast<double>(inputs.g[t * shape.v_heads + h])));
      const float beta = inputs.beta[t * shape.v_heads + h];
      for (std::size_t i = 0; i < dk * dv; ++i) s[i] *= decay;
      std::fill(memory.begin(), memory.end(), 0.0);
      for (std::size_t a = 0; a < dk; ++a) {
        for (std::size_t c = 0; c < dv; ++c) memory[c] += static_cast<double>(s[a * dv + c]) * k[a];
      }
      for (std::size_t c = 0; c < dv; ++c) {
        const auto delta = static_cast<float>((v[c] - memory[c]) * beta);
        for (std::size_t a = 0; a < dk; ++a) s[a * dv + c] += k[a] * delta;
      }
      float* o = out.data() + t * out_stride + h * dv;
      for (std::size_t c = 0; c < dv; ++c) {
        double sum = 0.0;
        for (std::size_t a = 0; a < dk; ++a) sum += static_cast<double>(s[a * dv + c]) * q[a];
        o[c] = static_cast<float>(sum);
      }
    }
  }
}

}  // namespace s1::backend::cpu::reference
