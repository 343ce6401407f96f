#include "vision/resample.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace s1::vision {
namespace {

constexpr int precision_bits = 32 - 8 - 2;  // Pillow's PRECISION_BITS: 8 result bits, 2 for overshoot
constexpr double bicubic_support = 2.0;

// Pillow's bicubic_filter, the Keys kernel with a = −0.5, written in its order of operations (the
// file is built without floating-point contraction, so no FMA changes a rounding).
double bicubic(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

// The taps of one output sample: input indices [first, first + coefficients.size()).
struct Taps {
  int first = 0;
  int count = 0;
};

struct Coefficients {
  int kernel_size = 0;           // ksize: the stride between samples' coefficients
  std::vector<Taps> taps;        // per output sample
  std::vector<int32_t> weights;  // [out][kernel_size] in 2^-22 units
};

// precompute_coeffs then normalize_coeffs_8bpc over the whole input (box 0..in_size).
Coefficients coefficients(int in_size, int out_size) {
  // Pillow computes the box extent in float, then the scale in double.
  const double scale = static_cast<double>(static_cast<float>(in_size) - 0.0F) / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = bicubic_support * filter_scale;
  Coefficients result;
  result.kernel_size = static_cast<int>(std::ceil(support)) * 2 + 1;
  const auto kernel_size = static_cast<std::size_t>(result.kernel_size);
  result.taps.resize(static_cast<std::size_t>(out_size));
  result.weights.assign(static_cast<std::size_t>(out_size) * kernel_size, 0);
  std::vector<double> k(kernel_size);
  const double inverse_filter_scale = 1.0 / filter_scale;
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = 0.0 + (xx + 0.5) * scale;
    // (int) truncates toward zero, as in Pillow, before the clamp.
    const int xmin = std::max(static_cast<int>(center - support + 0.5), 0);
    const int xmax = std::min(static_cast<int>(center + support + 0.5), in_size) - xmin;
    double sum = 0.0;
    for (int x = 0; x < xmax; ++x) {
      const double w = bicubic((x + xmin - center + 0.5) * inverse_filter_scale);
      k[static_cast<std::size_t>(x)] = w;
      sum += w;
    }
    int32_t* out = &result.weights[static_cast<std::size_t>(xx) * kernel_size];
    for (int x = 0; x < xmax; ++x) {
      double w = k[static_cast<std::size_t>(x)];
      if (sum != 0.0) w /= sum;
      out[x] = w < 0 ? static_cast<int32_t>(-0.5 + w * (1 << precision_bits))
                     : static_cast<int32_t>(0.5 + w * (1 << precision_bits));
    }
    result.taps[static_cast<std::size_t>(xx)] = {xmin, std::max(xmax, 0)};
  }
  return result;
}

uint8_t clip8(int32_t sum) { return static_cast<uint8_t>(std::clamp(sum >> precision_bits, 0, 255)); }

Image resample_horizontal(const Image& in, int width) {
  const Coefficients c = coefficients(in.width, width);
  Image out{.width = width, .height = in.height, .rgb = std::vector<uint8_t>(std::size_t{3} * width * in.height)};
  for (int y = 0; y < in.height; ++y) {
    const uint8_t* line = &in.rgb[std::size_t{3} * in.width * y];
    uint8_t* target = &out.rgb[std::size_t{3} * width * y];
    for (int xx = 0; xx < width; ++xx) {
      const Taps taps = c.taps[static_cast<std::size_t>(xx)];
      const int32_t* k = &c.weights[static_cast<std::size_t>(xx) * c.kernel_size];
      for (int channel = 0; channel < 3; ++channel) {
        int32_t sum = 1 << (precision_bits - 1);
        for (int x = 0; x < taps.count; ++x) sum += line[3 * (x + taps.first) + channel] * k[x];
        target[3 * xx + channel] = clip8(sum);
      }
    }
  }
  return out;
}

Image resample_vertical(const Image& in, int height) {
  const Coefficients c = coefficients(in.height, height);
  const std::size_t row = std::size_t{3} * in.width;
  Image out{.width = in.width, .height = height, .rgb = std::vector<uint8_t>(row * height)};
  for (int yy = 0; yy < height; ++yy) {
    const Taps taps = c.taps[static_cast<std::size_t>(yy)];
    const int32_t* k = &c.weights[static_cast<std::size_t>(yy) * c.kernel_size];
    uint8_t* target = &out.rgb[row * yy];
    for (std::size_t i = 0; i < row; ++i) {
      int32_t sum = 1 << (precision_bits - 1);
      for (int y = 0; y < taps.count; ++y) sum += in.rgb[row * (y + taps.first) + i] * k[y];
      target[i] = clip8(sum);
    }
  }
  return out;
}

}  // namespace

Image resize_bicubic(const Image& image, int width, int height) {
  if (width < 1 || height < 1 || image.width < 1 || image.height < 1 ||
      image.rgb.size() != std::size_t{3} * image.width * image.height) {
    throw std::invalid_argument("resize_bicubic: sizes must be positive and the image " + std::to_string(image.width) +
                                "x" + std::to_string(image.height) + " RGB");
  }
  // Pillow's horizontal pass only covers the rows the vertical pass reads; every row gives the same
  // values either way, so all rows are resampled here.
  if (width == image.width && height == image.height) return image;
  if (width == image.width) return resample_vertical(image, height);
  if (height == image.height) return resample_horizontal(image, width);
  // The pass order changes the 8-bit intermediate, so it must be Pillow's: since Pillow 13.0
  // (python-pillow/Pillow#9549) the vertical pass runs first when the height loses more than twice
  // as many pixels as the width.
  const int lost_rows = image.height - height, lost_columns = image.width - width;
  if (lost_rows > 0 && lost_rows > lost_columns * 2)
    return resample_horizontal(resample_vertical(image, height), width);
  return resample_vertical(resample_horizontal(image, width), height);
}

}  // namespace s1::vision
