#pragma once
// A PEFT LoRA adapter kept unmerged: each adapted projection computes W·x + scale·B(A·x) at run time,
// the low-rank part in fp32 whatever the base weights' precision. Merging the delta into BF16 weights
// loses it to BF16 rounding (JEMM's pre-merged build failed its reference gate for that reason);
// keeping A and B apart as the reference does avoids that.

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backend/cpu/linear.h"

namespace s1::decoder {

class LoraAdapter {
 public:
  struct Pair {
    std::vector<float> a;  // [rank, in_features]
    std::vector<float> b;  // [out_features, rank]
    std::size_t rank = 0, in_features = 0, out_features = 0;
  };

  // adapter_config.json (peft_type LORA; plain LoRA only: no DoRA, rsLoRA, bias, rank or alpha
  // patterns, modules_to_save or fan_in_fan_out) and adapter_model.safetensors (F32/F16/BF16
  // base_model.model.<weight>.lora_A.weight [r, in] / .lora_B.weight [out, r] pairs) of `dir`.
  // Throws checkpoint::LoadError naming the file and the problem.
  static LoraAdapter from_directory(const std::filesystem::path& dir);

  // The pair adapting the base tensor `weight_name` ("model.language_model.layers.0.mlp.up_proj.weight"),
  // or nullptr; marks it used.
  const Pair* take(const std::string& weight_name) const;
  // Throws checkpoint::LoadError when a pair was never taken: an adapter for weights the decoder
  // does not run (vision, a different architecture) must not be dropped silently.
  void check_all_taken() const;

  double scale() const { return scale_; }
  std::size_t size() const { return pairs_.size(); }

 private:
  std::filesystem::path source_;
  double scale_ = 1.0;
  std::map<std::string, Pair, std::less<>> pairs_;
  mutable std::map<std::string, bool, std::less<>> taken_;
};

// scale·B(A·x) added to the output of one projection whose rows stack several weights (a fused
// q|k|v projection): A of every adapted part stacked, B block-diagonal, both fp32.
class LowRankDelta {
 public:
  struct Part {
    std::size_t out_features = 0;             // rows of this weight in the fused output
    const LoraAdapter::Pair* pair = nullptr;  // nullptr: not adapted
  };
  // nullopt when no part is adapted. Throws checkpoint::LoadError when a pair's shape does not fit.
  static std::optional<LowRankDelta> make(std::span<const Part> parts, std::size_t in_features, double scale,
                                          std::string_view what);

  // x: [M, in_features], y: [M, Σ out_features]; y += scale·B(A·x). Not thread-safe (scratch).
  void add_to(std::span<const float> x, std::span<float> y) const;

 private:
  LowRankDelta(backend::cpu::PackedLinear down, backend::cpu::PackedLinear up)
      : down_(std::move(down)), up_(std::move(up)) {}
  backend::cpu::PackedLinear down_;  // A: in → Σ rank
  backend::cpu::PackedLinear up_;    // scale·B: Σ rank → Σ out
  mutable std::vector<float> hidden_;
};

}  // namespace s1::decoder
