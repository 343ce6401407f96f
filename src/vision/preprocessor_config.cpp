#include "vision/preprocessor_config.h"

#include <optional>
#include <string>
#include <vector>

#include "model/checkpoint/load_error.h"

namespace s1::vision {
namespace {

using checkpoint::ConfigReader;

std::array<float, 3> read_triple(ConfigReader& root, std::string_view key, std::array<float, 3> fallback) {
  const std::optional<std::vector<double>> values = root.optional<std::vector<double>>(key);
  if (!values) return fallback;
  if (values->size() != 3) root.reject(key, "must have 3 entries (R, G, B)");
  return {static_cast<float>((*values)[0]), static_cast<float>((*values)[1]), static_cast<float>((*values)[2])};
}

// size {shortest_edge, longest_edge} (Transformers 5) and the older top-level min_pixels /
// max_pixels, which Transformers lets override size.
void read_budget(ConfigReader& root, PreprocessorConfig& config) {
  if (std::optional<ConfigReader> size = root.optional_object("size")) {
    config.min_pixels = size->optional<int64_t>("shortest_edge", config.min_pixels);
    config.max_pixels = size->optional<int64_t>("longest_edge", config.max_pixels);
    // Older exports repeat the budget inside size; Transformers pops these keys.
    config.min_pixels = size->optional<int64_t>("min_pixels", config.min_pixels);
    config.max_pixels = size->optional<int64_t>("max_pixels", config.max_pixels);
    size->finish();
  }
  config.min_pixels = root.optional<int64_t>("min_pixels", config.min_pixels);
  config.max_pixels = root.optional<int64_t>("max_pixels", config.max_pixels);
  root.require_positive("min_pixels", config.min_pixels);
  root.require_positive("max_pixels", config.max_pixels);
  if (config.min_pixels > config.max_pixels) root.reject("min_pixels", "is above max_pixels");
}

void require_true(ConfigReader& root, std::string_view key, std::string_view why) {
  if (!root.optional<bool>(key, true)) root.reject(key, why);
}

}  // namespace

PreprocessorConfig read_preprocessor_config(const std::filesystem::path& file) {
  return read_preprocessor_config(ConfigReader::from_file(file));
}

PreprocessorConfig read_preprocessor_config(ConfigReader root) {
  PreprocessorConfig config;
  if (auto type = root.optional<std::string>("image_processor_type")) {
    if (*type != "Qwen2VLImageProcessor" && *type != "Qwen2VLImageProcessorFast" &&
        *type != "Qwen2VLImageProcessorPil") {
      root.reject("image_processor_type", "is '" + *type + "'; only the Qwen2-VL image processor is implemented");
    }
  }
  read_budget(root, config);
  config.patch_size = root.optional<int64_t>("patch_size", config.patch_size);
  config.temporal_patch_size = root.optional<int64_t>("temporal_patch_size", config.temporal_patch_size);
  config.merge_size = root.optional<int64_t>("merge_size", config.merge_size);
  root.require_positive("patch_size", config.patch_size);
  root.require_positive("temporal_patch_size", config.temporal_patch_size);
  root.require_positive("merge_size", config.merge_size);
  require_true(root, "do_resize", "false is not supported (the grid needs sides in multiples of patch × merge)");
  require_true(root, "do_convert_rgb", "false is not supported (images are decoded to RGB)");
  if (auto resample = root.optional<int64_t>("resample"); resample && *resample != 3) {
    root.reject("resample", "is " + std::to_string(*resample) + "; only 3 (bicubic) is implemented");
  }
  config.rescale = root.optional<bool>("do_rescale", config.rescale);
  config.rescale_factor = root.optional<double>("rescale_factor", config.rescale_factor);
  config.normalize = root.optional<bool>("do_normalize", config.normalize);
  config.image_mean = read_triple(root, "image_mean", config.image_mean);
  config.image_std = read_triple(root, "image_std", config.image_std);
  for (const float s : config.image_std) {
    if (!(s != 0.0F)) root.reject("image_std", "has a zero entry");
  }
  if (root.optional<bool>("do_center_crop", false)) root.reject("do_center_crop", "cropping is not implemented");
  if (root.optional<bool>("do_pad", false)) root.reject("do_pad", "padding is not implemented");
  // processor_class names the text-and-image processor around this one; the rest are settings of
  // Transformers' own bookkeeping that do not touch the pixels of a still image.
  root.ignore({"processor_class", "auto_map", "_processor_class", "data_format", "input_data_format",
               "default_to_square", "return_tensors", "device", "disable_grouping"});
  root.finish();
  return config;
}

}  // namespace s1::vision
