#include "backend/quant_blocks.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

namespace s1::backend::quant {
namespace {

// Each product and difference below is one float operation, in the order ggml and the gguf
// package's numpy reference use, so that results agree bit for bit. A product and a difference are
// separate statements: compilers may contract a*b-c within one expression into an FMA.

std::uint16_t load_u16(const std::uint8_t* at) {
  std::uint16_t value = 0;
  std::memcpy(&value, at, sizeof(value));
  return value;
}

void store_u16(std::uint8_t* at, std::uint16_t value) { std::memcpy(at, &value, sizeof(value)); }

float load_half(const std::uint8_t* at) { return f16_to_float(load_u16(at)); }

// Q4_K and Q5_K share the layout of d, dmin and the packed scales; Q5_K adds a fifth bit per value
// from qh (bit `chunk` of qh[l] for the chunk-th run of 32 values).
void q45_k_block(const std::uint8_t* block, float* out, bool five_bits) {
  const float d = load_half(block);
  const float dmin = load_half(block + 2);
  const std::uint8_t* scales = block + 4;
  const std::uint8_t* qh = block + 16;
  const std::uint8_t* qs = five_bits ? block + 48 : block + 16;
  for (int chunk = 0; chunk < 8; ++chunk) {
    std::uint8_t scale = 0;
    std::uint8_t min = 0;
    k_scale_min(chunk, scales, scale, min);
    const float dl = d * static_cast<float>(scale);
    const float ml = dmin * static_cast<float>(min);
    const std::uint8_t* q = qs + 32 * (chunk / 2);
    const int shift = 4 * (chunk % 2);
    for (int l = 0; l < 32; ++l) {
      int value = (q[l] >> shift) & 0x0F;
      if (five_bits) value |= ((qh[l] >> chunk) & 1) << 4;
      const float scaled = dl * static_cast<float>(value);
      out[32 * chunk + l] = scaled - ml;
    }
  }
}

// ggml's nearest_int: round to nearest, ties to even (the float magic-number trick), |x| < 2²².
int nearest_int(float x) { return static_cast<int>(std::nearbyint(x)); }

void quantize_q8_0_block(const float* x, std::uint8_t* block) {
  float amax = 0.0F;
  for (std::size_t j = 0; j < q8_0_values; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0F;
  const float id = d != 0.0F ? 1.0F / d : 0.0F;
  store_u16(block, float_to_f16(d));
  for (std::size_t j = 0; j < q8_0_values; ++j) {
    const float scaled = x[j] * id;
    block[2 + j] = static_cast<std::uint8_t>(static_cast<std::int8_t>(std::round(scaled)));
  }
}

// ggml's make_qkx2_quants(32, 15, …, rmin −1, rdelta 0.1, nstep 20, use_mad false): the scale and
// (negated) min of one sub-block minimising the weighted squared error over a small search.
float make_qkx2_quants(const float* x, const float* weights, std::uint8_t* levels, float& the_min) {
  constexpr int n = 32, nmax = 15, nstep = 20;
  constexpr float rmin = -1.0F, rdelta = 0.1F;
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    min = std::min(min, x[i]);
    max = std::max(max, x[i]);
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    std::fill_n(levels, n, 0);
    the_min = -min;
    return 0.0F;
  }
  float iscale = nmax / (max - min);
  float scale = 1 / iscale;
  float best_mad = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    levels[i] = static_cast<std::uint8_t>(std::clamp(l, 0, nmax));
    const float scaled = scale * levels[i];
    const float diff = scaled + min - x[i];
    best_mad += weights[i] * (diff * diff);
  }
  std::uint8_t trial[n];
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * static_cast<float>(is) + nmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax);
      trial[i] = static_cast<std::uint8_t>(l);
      const float w = weights[i];
      sum_l += w * static_cast<float>(l);
      sum_l2 += w * static_cast<float>(l) * static_cast<float>(l);
      sum_xl += w * static_cast<float>(l) * x[i];
    }
    const float determinant = sum_w * sum_l2 - sum_l * sum_l;
    if (determinant > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / determinant;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / determinant;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float mad = 0;
      for (int i = 0; i < n; ++i) {
        const float scaled = this_scale * trial[i];
        const float diff = scaled + this_min - x[i];
        mad += weights[i] * (diff * diff);
      }
      if (mad < best_mad) {
        std::copy_n(trial, n, levels);
        best_mad = mad;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  the_min = -min;
  return scale;
}

void quantize_q4_k_block(const float* x, std::uint8_t* block) {
  std::uint8_t levels[q4_k_values];
  float weights[32], mins[8], scales[8];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
    scales[j] = make_qkx2_quants(x + 32 * j, weights, levels + 32 * j, mins[j]);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  const float inv_scale = max_scale > 0 ? 63.0F / max_scale : 0.0F;
  const float inv_min = max_min > 0 ? 63.0F / max_min : 0.0F;
  std::uint8_t* packed = block + 4;
  std::fill_n(packed, 12, 0);
  for (int j = 0; j < 8; ++j) {
    const auto ls = static_cast<std::uint8_t>(std::min(63, nearest_int(inv_scale * scales[j])));
    const auto lm = static_cast<std::uint8_t>(std::min(63, nearest_int(inv_min * mins[j])));
    if (j < 4) {
      packed[j] = ls;
      packed[j + 4] = lm;
    } else {
      packed[j + 4] = static_cast<std::uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      packed[j - 4] |= static_cast<std::uint8_t>((ls >> 4) << 6);
      packed[j] |= static_cast<std::uint8_t>((lm >> 4) << 6);
    }
  }
  store_u16(block, float_to_f16(max_scale / 63.0F));
  store_u16(block + 2, float_to_f16(max_min / 63.0F));
  for (int j = 0; j < 8; ++j) {
    std::uint8_t sc = 0, m = 0;
    k_scale_min(j, packed, sc, m);
    const float d = load_half(block) * sc;
    if (d == 0.0F) continue;
    const float dm = load_half(block + 2) * m;
    for (int i = 0; i < 32; ++i) {
      const int l = nearest_int((x[32 * j + i] + dm) / d);
      levels[32 * j + i] = static_cast<std::uint8_t>(std::clamp(l, 0, 15));
    }
  }
  std::uint8_t* q = block + 16;
  for (std::size_t j = 0; j < q4_k_values; j += 64) {
    for (std::size_t l = 0; l < 32; ++l) q[l] = static_cast<std::uint8_t>(levels[j + l] | (levels[j + l + 32] << 4));
    q += 32;
  }
}

void check_row(DType dtype, std::size_t values) {
  if (!quantized(dtype) || values % block_values(dtype) != 0)
    throw std::invalid_argument("quantised row: " + std::to_string(values) + " values of " +
                                std::string(dtype_name(dtype)) + " (whole blocks of a quantised dtype)");
}

}  // namespace

void k_scale_min(int j, const std::uint8_t* scales, std::uint8_t& scale, std::uint8_t& min) {
  if (j < 4) {
    scale = scales[j] & 63;
    min = scales[j + 4] & 63;
  } else {
    scale = static_cast<std::uint8_t>((scales[j + 4] & 0x0F) | ((scales[j - 4] >> 6) << 4));
    min = static_cast<std::uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

void dequantize_q8_0_block(const std::uint8_t* block, float* out) {
  const float d = load_half(block);
  const auto* qs = reinterpret_cast<const std::int8_t*>(block + 2);
  for (std::size_t j = 0; j < q8_0_values; ++j) out[j] = static_cast<float>(qs[j]) * d;
}

void dequantize_q4_k_block(const std::uint8_t* block, float* out) { q45_k_block(block, out, false); }
void dequantize_q5_k_block(const std::uint8_t* block, float* out) { q45_k_block(block, out, true); }

void dequantize_q5_0_block(const std::uint8_t* block, float* out) {
  const float d = load_half(block);
  std::uint32_t qh = 0;
  std::memcpy(&qh, block + 2, sizeof(qh));
  const std::uint8_t* qs = block + 6;
  for (std::size_t j = 0; j < q5_0_values / 2; ++j) {
    const auto high_low = static_cast<int>(((qh >> j) << 4) & 0x10);
    const auto high_high = static_cast<int>((qh >> (j + 12)) & 0x10);
    out[j] = static_cast<float>(((qs[j] & 0x0F) | high_low) - 16) * d;
    out[j + 16] = static_cast<float>(((qs[j] >> 4) | high_high) - 16) * d;
  }
}

void quantize_q5_0_block(const float* x, std::uint8_t* block) {
  float amax = 0.0F, max = 0.0F;
  for (std::size_t j = 0; j < q5_0_values; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -16.0F;
  const float id = d != 0.0F ? 1.0F / d : 0.0F;
  store_u16(block, float_to_f16(d));
  std::uint32_t qh = 0;
  std::uint8_t* qs = block + 6;
  for (std::size_t j = 0; j < q5_0_values / 2; ++j) {
    // ggml truncates x/d + 16.5 towards zero: round half up, on values in [0.5, 32.5].
    const int low = std::min(31, static_cast<int>(static_cast<std::int8_t>(x[j] * id + 16.5F)));
    const int high = std::min(31, static_cast<int>(static_cast<std::int8_t>(x[j + 16] * id + 16.5F)));
    qs[j] = static_cast<std::uint8_t>((low & 0x0F) | ((high & 0x0F) << 4));
    qh |= static_cast<std::uint32_t>((low & 0x10) >> 4) << j;
    qh |= static_cast<std::uint32_t>((high & 0x10) >> 4) << (j + 16);
  }
  std::memcpy(block + 2, &qh, sizeof(qh));
}

void dequantize_row(DType dtype, const std::byte* blocks, std::size_t values, float* out) {
  check_row(dtype, values);
  const auto* data = reinterpret_cast<const std::uint8_t*>(blocks);
  const std::size_t count = values / block_values(dtype);
  for (std::size_t b = 0; b < count; ++b) {
    if (dtype == DType::q8_0)
      dequantize_q8_0_block(data + b * q8_0_bytes, out + b * q8_0_values);
    else
      dequantize_q4_k_block(data + b * q4_k_bytes, out + b * q4_k_values);
  }
}

void quantize_row(DType dtype, const float* x, std::size_t values, std::byte* blocks) {
  check_row(dtype, values);
  auto* data = reinterpret_cast<std::uint8_t*>(blocks);
  const std::size_t count = values / block_values(dtype);
  for (std::size_t b = 0; b < count; ++b) {
    if (dtype == DType::q8_0)
      quantize_q8_0_block(x + b * q8_0_values, data + b * q8_0_bytes);
    else
      quantize_q4_k_block(x + b * q4_k_values, data + b * q4_k_bytes);
  }
}

float quantize_activation_block(const float* x, std::int8_t* q) {
  float amax = 0.0F;
  for (std::size_t j = 0; j < activation_block_values; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0F;
  const float id = d != 0.0F ? 1.0F / d : 0.0F;
  for (std::size_t j = 0; j < activation_block_values; ++j) {
    const float scaled = x[j] * id;
    q[j] = static_cast<std::int8_t>(std::nearbyint(scaled));
  }
  return d;
}

}  // namespace s1::backend::quant
