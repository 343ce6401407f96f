#include "model/qwen3_5_vision/config.h"

#include <cmath>
#include <optional>
#include <utility>
#include <vector>

#include "model/checkpoint/load_error.h"

namespace s1::qwen3_5_vision {
namespace {

using checkpoint::ConfigReader;

VisionConfig read_vision(ConfigReader& vision) {
  VisionConfig config;
  if (auto type = vision.optional<std::string>("model_type"); type && *type != "qwen3_5_vision" && *type != "qwen3_5") {
    vision.reject("model_type", "is '" + *type + "'; expected 'qwen3_5_vision'");
  }
  config.depth = vision.optional<int64_t>("depth", config.depth);
  config.hidden_size = vision.optional<int64_t>("hidden_size", config.hidden_size);
  config.intermediate_size = vision.optional<int64_t>("intermediate_size", config.intermediate_size);
  config.num_heads = vision.optional<int64_t>("num_heads", config.num_heads);
  config.in_channels = vision.optional<int64_t>("in_channels", config.in_channels);
  config.patch_size = vision.optional<int64_t>("patch_size", config.patch_size);
  config.spatial_merge_size = vision.optional<int64_t>("spatial_merge_size", config.spatial_merge_size);
  config.temporal_patch_size = vision.optional<int64_t>("temporal_patch_size", config.temporal_patch_size);
  config.out_hidden_size = vision.optional<int64_t>("out_hidden_size", config.out_hidden_size);
  config.num_position_embeddings = vision.optional<int64_t>("num_position_embeddings", config.num_position_embeddings);
  for (const auto& [key, value] : {std::pair<std::string_view, int64_t>{"depth", config.depth},
                                   {"hidden_size", config.hidden_size},
                                   {"intermediate_size", config.intermediate_size},
                                   {"num_heads", config.num_heads},
                                   {"patch_size", config.patch_size},
                                   {"spatial_merge_size", config.spatial_merge_size},
                                   {"temporal_patch_size", config.temporal_patch_size},
                                   {"out_hidden_size", config.out_hidden_size},
                                   {"num_position_embeddings", config.num_position_embeddings}}) {
    vision.require_positive(key, value);
  }
  if (config.in_channels != 3) vision.reject("in_channels", "must be 3 (RGB)");
  // The axial rotary splits each head into h and w halves of rotate-half pairs.
  if (config.hidden_size % config.num_heads != 0 || config.head_dim() % 4 != 0) {
    vision.reject("num_heads", "must divide hidden_size into heads of a multiple of 4 values");
  }
  const auto side = static_cast<int64_t>(std::sqrt(static_cast<double>(config.num_position_embeddings)));
  if (side < 2) vision.reject("num_position_embeddings", "must give a position grid of at least 2 x 2");
  const std::string act = vision.optional<std::string>("hidden_act", "gelu_pytorch_tanh");
  if (act != "gelu_pytorch_tanh" && act != "gelu") {
    vision.reject("hidden_act", "is '" + act + "'; only 'gelu_pytorch_tanh' and 'gelu' are supported");
  }
  config.tanh_gelu = act == "gelu_pytorch_tanh";
  if (std::optional<ConfigReader> rope = vision.optional_object("rope_parameters")) {
    if (auto type = rope->optional<std::string>("rope_type"); type && *type != "axial") {
      rope->reject("rope_type", "is '" + *type + "'; the vision tower's rotary is 'axial'");
    }
    config.rope_theta = rope->optional<double>("rope_theta", config.rope_theta);
    rope->finish();
  }
  if (!(config.rope_theta > 0.0)) vision.reject("rope_parameters", "rope_theta must be positive");
  if (auto taps = vision.optional<std::vector<int64_t>>("deepstack_visual_indexes"); taps && !taps->empty()) {
    vision.reject("deepstack_visual_indexes", "Qwen3-VL's deepstack features are not implemented");
  }
  vision.ignore({"initializer_range", "transformers_version", "_name_or_path", "dtype", "torch_dtype", "architectures",
                 "output_attentions", "output_hidden_states", "return_dict", "id2label", "label2id", "problem_type",
                 "chunk_size_feed_forward", "is_encoder_decoder"});
  vision.finish();
  return config;
}

}  // namespace

VisionConfig read_vision_config(const std::filesystem::path& config_file) {
  return read_vision_config(ConfigReader::from_file(config_file));
}

VisionConfig read_vision_config(ConfigReader root) {
  if (root.optional<std::string>("model_type") == std::optional<std::string>("qwen3_5")) {
    ConfigReader vision = root.required_object("vision_config");
    return read_vision(vision);
  }
  return read_vision(root);
}

}  // namespace s1::qwen3_5_vision
