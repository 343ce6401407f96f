#pragma once
// A Qwen2-VL-style image processor's settings (Qwen2/2.5/3-VL, Qwen3.5), read strictly from a
// checkpoint's preprocessor_config.json with Transformers' Qwen2VLImageProcessor defaults for absent
// keys. A setting that would change the pixels and is not implemented (another resampling filter,
// no resize, no RGB conversion, a crop) is a checkpoint::LoadError naming the file and the key.

#include <array>
#include <cstdint>
#include <filesystem>

#include "model/checkpoint/config_reader.h"

namespace s1::vision {

struct PreprocessorConfig {
  // The pixel budget of the resized image (Transformers' size.shortest_edge / size.longest_edge,
  // formerly min_pixels / max_pixels).
  int64_t min_pixels = 56 * 56;
  int64_t max_pixels = 28 * 28 * 1280;
  int64_t patch_size = 14;
  int64_t temporal_patch_size = 2;
  int64_t merge_size = 2;
  bool rescale = true;
  double rescale_factor = 1.0 / 255.0;
  bool normalize = true;
  // float32, as numpy holds them when normalising.
  std::array<float, 3> image_mean{0.48145466F, 0.4578275F, 0.40821073F};
  std::array<float, 3> image_std{0.26862954F, 0.26130258F, 0.27577711F};
};

[[nodiscard]] PreprocessorConfig read_preprocessor_config(const std::filesystem::path& file);
[[nodiscard]] PreprocessorConfig read_preprocessor_config(checkpoint::ConfigReader root);

}  // namespace s1::vision
