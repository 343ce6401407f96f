#pragma once
// Valen's bilinear decision head (Liuziyu77/Valen valen/modeling/qwen/model.py DecisionHead, head_type
// "bilinear"): the Decision state and each candidate's endpoint state are projected to projection_dim
// values by two bias-free linears, and a candidate's logit is their dot product divided by
// √projection_dim, all in fp32 as the reference computes its head over a bf16 or fp32 backbone.

#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "model/common/backend_choice.h"

namespace s1::heads {

class BilinearHead {
 public:
  // The head of the safetensors file `path`: `decision_name` and `candidate_name`, each
  // [projection_dim, hidden] F32/F16/BF16 (widened to fp32), of one shape. Throws checkpoint::LoadError
  // naming the file and the tensor for a missing tensor, another shape or a non-finite weight.
  static BilinearHead from_file(const std::filesystem::path& path, std::string_view decision_name,
                                std::string_view candidate_name, std::size_t hidden,
                                backend::Backend& backend = model::default_backend());
  // decision_weight and candidate_weight: [projection_dim, hidden] row-major fp32.
  BilinearHead(std::vector<float> decision_weight, std::vector<float> candidate_weight, std::size_t hidden,
               backend::Backend& backend = model::default_backend());
  ~BilinearHead();
  BilinearHead(BilinearHead&&) noexcept;
  BilinearHead& operator=(BilinearHead&&) noexcept;

  [[nodiscard]] std::size_t hidden() const { return hidden_; }
  [[nodiscard]] std::size_t projection_dim() const { return projection_dim_; }

  // One logit per candidate: decision_state [hidden], candidate_states [candidates, hidden] row-major.
  // std::invalid_argument for other sizes or no candidate.
  [[nodiscard]] std::vector<float> logits(std::span<const float> decision_state,
                                          std::span<const float> candidate_states) const;

 private:
  std::size_t hidden_ = 0;
  std::size_t projection_dim_ = 0;
  backend::Backend* backend_;
  std::unique_ptr<backend::PackedMatrix> decision_;
  std::unique_ptr<backend::PackedMatrix> candidate_;
};

}  // namespace s1::heads
