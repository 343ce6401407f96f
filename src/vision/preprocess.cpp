#include "vision/preprocess.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>

#include "vision/resample.h"

namespace s1::vision {
namespace {

constexpr int64_t side_limit = int64_t{1} << 20;

}  // namespace

ResizedSize smart_resize(int64_t height, int64_t width, int64_t factor, int64_t min_pixels, int64_t max_pixels) {
  if (height < 1 || width < 1) throw PreprocessError("the image is empty");
  const auto h = static_cast<double>(height), w = static_cast<double>(width);
  const double ratio = std::max(h, w) / std::min(h, w);
  if (ratio > 200) {
    throw PreprocessError("absolute aspect ratio must be smaller than 200, got " + std::to_string(ratio) + " (" +
                          std::to_string(width) + "x" + std::to_string(height) + ")");
  }
  const auto f = static_cast<double>(factor);
  // A side is a whole number of factors; more than 2^20 pixels a side is no image this serves (and
  // would overflow the products below), whatever budget a configuration states.
  const auto factors = [&](double count) {
    if (!(count <= static_cast<double>(side_limit / factor))) {
      throw PreprocessError("the resized image would have a side over " + std::to_string(side_limit) + " pixels");
    }
    return static_cast<int64_t>(count) * factor;
  };
  // Python's round() rounds half to even, as nearbyint does in the default rounding mode.
  int64_t h_bar = factors(std::nearbyint(h / f));
  int64_t w_bar = factors(std::nearbyint(w / f));
  const auto pixels = static_cast<double>(height) * static_cast<double>(width);
  if (h_bar * w_bar > max_pixels) {
    const double beta = std::sqrt(pixels / static_cast<double>(max_pixels));
    h_bar = std::max(factor, factors(std::floor(h / beta / f)));
    w_bar = std::max(factor, factors(std::floor(w / beta / f)));
  } else if (h_bar * w_bar < min_pixels) {
    const double beta = std::sqrt(static_cast<double>(min_pixels) / pixels);
    h_bar = factors(std::ceil(h * beta / f));
    w_bar = factors(std::ceil(w * beta / f));
  }
  return {h_bar, w_bar};
}

Patches preprocess(const Image& image, const PreprocessorConfig& config) {
  const int64_t patch = config.patch_size, merge = config.merge_size, temporal = config.temporal_patch_size;
  const ResizedSize size = smart_resize(image.height, image.width, patch * merge, config.min_pixels, config.max_pixels);
  const Image resized = resize_bicubic(image, static_cast<int>(size.width), static_cast<int>(size.height));

  // Every pixel takes one of 256 values per channel: numpy's float32(float64(v) · factor), then
  // (x − mean) / std in float32.
  std::array<std::array<float, 256>, 3> level{};
  for (std::size_t c = 0; c < 3; ++c) {
    for (int v = 0; v < 256; ++v) {
      float x =
          config.rescale ? static_cast<float>(static_cast<double>(v) * config.rescale_factor) : static_cast<float>(v);
      if (config.normalize) x = (x - config.image_mean[c]) / config.image_std[c];
      level[c][static_cast<std::size_t>(v)] = x;
    }
  }

  Patches out;
  out.grid_t = 1;
  out.grid_h = size.height / patch;
  out.grid_w = size.width / patch;
  out.patch_values = 3 * temporal * patch * patch;
  out.values.resize(static_cast<std::size_t>(out.grid_h * out.grid_w * out.patch_values));
  const auto p = static_cast<std::size_t>(patch);
  const auto row_bytes = static_cast<std::size_t>(resized.width) * 3;
  float* target = out.values.data();
  for (int64_t window_row = 0; window_row < out.grid_h / merge; ++window_row) {
    for (int64_t window_col = 0; window_col < out.grid_w / merge; ++window_col) {
      for (int64_t in_row = 0; in_row < merge; ++in_row) {
        for (int64_t in_col = 0; in_col < merge; ++in_col) {
          const auto top = static_cast<std::size_t>((window_row * merge + in_row) * patch);
          const auto left = static_cast<std::size_t>((window_col * merge + in_col) * patch);
          for (std::size_t c = 0; c < 3; ++c) {
            float* first_frame = target;
            for (std::size_t y = 0; y < p; ++y) {
              const uint8_t* pixel = &resized.rgb[(top + y) * row_bytes + left * 3 + c];
              for (std::size_t x = 0; x < p; ++x) *target++ = level[c][pixel[3 * x]];
            }
            // A still repeats itself over the temporal patch.
            for (int64_t t = 1; t < temporal; ++t) target = std::copy(first_frame, first_frame + p * p, target);
          }
        }
      }
    }
  }
  return out;
}

}  // namespace s1::vision
