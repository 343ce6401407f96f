#pragma once
// A still image turned into the vision tower's input exactly as Transformers' Qwen2VLImageProcessorPil
// does it (the processor Transformers 5.24's AutoImageProcessor picks for Qwen3.5 / Qwen3-VL
// checkpoints where torchvision is not installed): smart_resize, Pillow bicubic, rescale, normalise,
// temporal duplication and patches in merge-window order.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "vision/image.h"
#include "vision/preprocessor_config.h"

namespace s1::vision {

// An image the processor cannot take (the reference raises for it too): the message says why, for
// a 400 naming the image.
class PreprocessError : public std::invalid_argument {
 public:
  explicit PreprocessError(const std::string& message) : std::invalid_argument(message) {}
};

struct ResizedSize {
  int64_t height = 0;
  int64_t width = 0;
};

// Qwen2-VL's smart_resize: sides rounded (half to even) to multiples of `factor`, then scaled into
// [min_pixels, max_pixels] keeping the aspect ratio, in the reference's double arithmetic.
// PreprocessError when the longer side is more than 200 times the shorter (as the reference), or a
// resized side would pass 2^20 pixels.
[[nodiscard]] ResizedSize smart_resize(int64_t height, int64_t width, int64_t factor, int64_t min_pixels,
                                       int64_t max_pixels);

// pixel_values of one image: grid_t · grid_h · grid_w patches (grid_t = 1 for a still), each
// channels · temporal_patch_size · patch_size² values in (C, T, py, px) order, patches ordered by
// merge window (window row, window column, row in window, column in window), as the patch
// embedding's Conv3d weight is laid out.
struct Patches {
  int64_t grid_t = 0, grid_h = 0, grid_w = 0;
  int64_t patch_values = 0;   // 3 · temporal_patch_size · patch_size²
  std::vector<float> values;  // [grid_t · grid_h · grid_w, patch_values]
};

[[nodiscard]] Patches preprocess(const Image& image, const PreprocessorConfig& config);

}  // namespace s1::vision
