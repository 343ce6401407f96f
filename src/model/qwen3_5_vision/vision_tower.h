#pragma once
// The Qwen3.5 vision tower (Transformers' Qwen3_5VisionModel) on the backend: patch embedding (the
// Conv3d as one matmul), the learned position grid interpolated bilinearly to each image's grid,
// 2-D axial rotary, bidirectional attention within each image (each frame), GELU MLP blocks, and the
// merger that turns each merge window of patches into one language-model token.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/checkpoint/checkpoint.h"
#include "model/decoder/lora_adapter.h"
#include "model/qwen3_5_vision/config.h"

namespace s1::qwen3_5_vision {

// One image's patch grid (temporal, height, width in patches), as the processor's image_grid_thw.
struct Grid {
  int64_t t = 1, h = 0, w = 0;
};

class VisionTower {
 public:
  // The tower of a Qwen3_5ForConditionalGeneration checkpoint directory (config.json, tensors under
  // model.visual.), packed for `backend` in `arithmetic`. LoadError on a bad config or tensor.
  //
  // lora: a PEFT adapter applied unmerged to the MLP linears (linear_fc1 / linear_fc2) of the
  // blocks and of the merger, as Cua-S1's multimodal adapter adapts them: each adds its fp32
  // scale·B(A·x) before the activation. The tower takes its pairs (the text decoder's stay for
  // qwen3_5::load_qwen3_5, which checks that every pair was taken: load the tower first); a pair for
  // another tower weight (attn.qkv, attn.proj, patch_embed) is a LoadError.
  static VisionTower load(const std::filesystem::path& dir, backend::Backend& backend,
                          backend::Arithmetic arithmetic = backend::Arithmetic::fp32,
                          const decoder::LoraAdapter* lora = nullptr);
  VisionTower(const VisionConfig& config, const checkpoint::Checkpoint& weights, std::string_view prefix,
              backend::Backend& backend, backend::Arithmetic arithmetic, const decoder::LoraAdapter* lora = nullptr);

  // The merger's output for images packed in order: pixel_values [Σ t·h·w, patch_values] fp32 in
  // the processor's merge-window order; returns [Σ t·h·w / merge², out_hidden_size] fp32, image by
  // image. std::invalid_argument when a grid does not fit (sides not multiples of the merge size,
  // rows not matching the grids).
  [[nodiscard]] backend::Tensor forward(const backend::Tensor& pixel_values, std::span<const Grid> grids) const;

  [[nodiscard]] const VisionConfig& config() const { return config_; }

 private:
  // A linear layer, its activation (fused into `base` unless an adapter must add to its input), and
  // an unmerged LoRA: down = A [rank, in], up = scale·B [out, rank], both fp32.
  struct Linear {
    std::unique_ptr<backend::PackedMatrix> base, down, up;
    backend::Activation activation = backend::Activation::none;
    // y (+)= activation(base·x + up·down·x); an adapted linear with an activation never accumulates.
    void apply(backend::Backend& be, const backend::Tensor& x, bool accumulate, const backend::Tensor& y) const;
  };
  struct Block {
    backend::Tensor norm1_weight, norm1_bias, norm2_weight, norm2_bias;
    std::unique_ptr<backend::PackedMatrix> qkv, proj;
    Linear fc1, fc2;
  };

  VisionConfig config_;
  backend::Backend* backend_;
  std::unique_ptr<backend::PackedMatrix> patch_embed_;
  backend::Tensor position_table_;  // [num_position_embeddings, hidden] as stored
  std::vector<Block> blocks_;
  backend::Tensor merger_norm_weight_, merger_norm_bias_;
  Linear merger_fc1_, merger_fc2_;
};

}  // namespace s1::qwen3_5_vision
