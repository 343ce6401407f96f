#pragma once
// The Vela 2.0 decoders' CandidateHead (the Decision 2.0 shared candidate head the 0.8B, 4B and 9B
// carry as head.*): each option's endpoint state c and the question block's last state q are
// LayerNorm-ed (one norm each, eps 1e-5), and
//   logit = ⟨K c, Q q⟩ / √d + w · GELU(Mc c + bc + Mq q)
// with K, Q, Mq bias-free [d, hidden], Mc [d, hidden] with bias, w [1, d], GELU exact, all fp32.

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/checkpoint/checkpoint.h"
#include "model/common/backend_choice.h"

namespace s1::heads {

class CandidateHead {
 public:
  // The head's tensors under `prefix` ("head.") of `weights`: candidate_norm.{weight,bias},
  // query_norm.{weight,bias} [hidden], key.weight, query.weight, query_mlp.weight [d, hidden],
  // candidate_mlp.{weight [d, hidden], bias [d]}, scalar.weight [1, d]. Throws checkpoint::LoadError
  // naming the file and tensor for a missing one or another shape.
  CandidateHead(const checkpoint::Checkpoint& weights, const std::string& prefix, std::size_t hidden,
                backend::Backend& backend = model::default_backend());
  ~CandidateHead();
  CandidateHead(CandidateHead&&) noexcept;
  CandidateHead& operator=(CandidateHead&&) noexcept;

  // The names of every tensor the head reads, for a caller that checks a file holds nothing else.
  [[nodiscard]] static std::vector<std::string> tensor_names(const std::string& prefix);

  [[nodiscard]] std::size_t head_dim() const { return head_dim_; }

  // One logit per candidate: query_state [hidden], candidate_states [candidates, hidden] row-major.
  // std::invalid_argument for other sizes or no candidate.
  [[nodiscard]] std::vector<float> logits(std::span<const float> query_state,
                                          std::span<const float> candidate_states) const;

 private:
  [[nodiscard]] backend::Tensor normed(const backend::Tensor& rows, const backend::Tensor& weight,
                                       const backend::Tensor& bias) const;
  [[nodiscard]] backend::Tensor project(const backend::Tensor& rows, const backend::PackedMatrix& weight) const;

  backend::Backend* backend_;
  std::size_t hidden_ = 0;
  std::size_t head_dim_ = 0;
  backend::Tensor candidate_norm_weight_, candidate_norm_bias_, query_norm_weight_, query_norm_bias_;
  std::unique_ptr<backend::PackedMatrix> key_, query_, candidate_mlp_, query_mlp_, scalar_;
};

}  // namespace s1::heads
