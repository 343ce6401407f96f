#pragma once
// The Qwen3.5 vision tower's settings (Transformers' Qwen3_5VisionConfig), read strictly from a
// Qwen3_5ForConditionalGeneration config.json's vision_config (or a bare model_type
// "qwen3_5_vision" config), with Transformers' defaults for absent keys. Anything that would change
// the tower's maths and is not implemented (another activation or rope type, other channel counts,
// Qwen3-VL's deepstack taps) is a checkpoint::LoadError naming the file and the key.

#include <cstdint>
#include <filesystem>
#include <string>

#include "model/checkpoint/config_reader.h"

namespace s1::qwen3_5_vision {

struct VisionConfig {
  int64_t depth = 27;
  int64_t hidden_size = 1152;
  int64_t intermediate_size = 4304;
  int64_t num_heads = 16;
  int64_t in_channels = 3;
  int64_t patch_size = 16;
  int64_t spatial_merge_size = 2;
  int64_t temporal_patch_size = 2;
  int64_t out_hidden_size = 3584;
  int64_t num_position_embeddings = 2304;
  bool tanh_gelu = true;  // hidden_act gelu_pytorch_tanh (true) or gelu (exact, false)
  double rope_theta = 10000.0;

  [[nodiscard]] int64_t head_dim() const { return hidden_size / num_heads; }
  [[nodiscard]] int64_t patch_values() const { return in_channels * temporal_patch_size * patch_size * patch_size; }
};

[[nodiscard]] VisionConfig read_vision_config(const std::filesystem::path& config_file);
// The wrapper's root object (its vision_config is read; the rest belongs to the decoder's reader)
// or a bare vision config.
[[nodiscard]] VisionConfig read_vision_config(checkpoint::ConfigReader root);

}  // namespace s1::qwen3_5_vision
