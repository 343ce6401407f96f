#pragma once
// Vela 2.0 0.3B's marker readout (the vela2-unified package's "heads": vllm-sr/Vela-2.0-0.3B
// modeling_vela2.py `_Vela2Forward.heads`, as vllm-sr's own reimplementation `MarkerHead` and a
// Core ML port read it), on the backend in fp32 on the encoder's last hidden states of one marker
// sequence:
//
//   part   = normalize(W_p · LN(mean h[pool_begin, pool_end)))           per question
//   query  = W_q · LN(h[Q])                                              per question
//   option = normalize(W_o · LN(h[O]) + query)                           per [O] / [ABS] marker
//   logit  = option · part / exp(log_tau)   (cosine)   [+ MLP(h[O]) = W_3 · ReLU(W_0 · h[O])  (mlp)]
//
// with one LayerNorm (eps 1e-5) shared by every read and normalize = x / max(‖x‖, 1e-12), as
// torch.nn.functional.normalize. "readout" picks cosine, mlp or both (the released 0.3B: both).
// The span tensors (w_t, w_e, log_tau_span) belong to span questions, which s1serve does not serve.

#include <cstddef>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "model/checkpoint/checkpoint.h"
#include "model/common/backend_choice.h"

namespace s1::heads {

enum class VelaReadout { cosine, mlp, both };

// Where one question sits in its sequence: its [Q] marker, its option markers ([ABS] last when
// present) and the rows its state pool averages.
struct VelaQuestionSlots {
  std::size_t query = 0;
  std::vector<std::size_t> options;
  std::size_t pool_begin = 0, pool_end = 0;
};

class VelaMarkerHead {
 public:
  // Reads the head tensors (top-level names, beside the "encoder."-prefixed encoder) for a
  // `hidden`-wide encoder; any other top-level tensor is a load error naming the file and tensor.
  VelaMarkerHead(const checkpoint::Checkpoint& weights, std::size_t hidden, std::size_t projection, VelaReadout readout,
                 std::string_view encoder_prefix, backend::Backend& backend = model::default_backend());

  // One fp32 logit per option marker of each question; hidden: [rows, hidden] of one sequence.
  [[nodiscard]] std::vector<std::vector<float>> option_logits(std::span<const float> hidden,
                                                              std::span<const VelaQuestionSlots> questions) const;

 private:
  // LayerNorm of rows [n, hidden] into a new [n, hidden] tensor.
  [[nodiscard]] backend::Tensor normed(const backend::Tensor& rows) const;
  // rows · Wᵀ + b into a new [n, out_features] tensor.
  [[nodiscard]] backend::Tensor project(const backend::Tensor& rows, const backend::PackedMatrix& weight) const;
  [[nodiscard]] std::vector<float> cosine_scores(const backend::Tensor& hidden, const backend::Tensor& markers,
                                                 const VelaQuestionSlots& question) const;

  backend::Backend* backend_;
  std::size_t hidden_, projection_;
  VelaReadout readout_;
  backend::Tensor norm_weight_, norm_bias_;
  std::unique_ptr<backend::PackedMatrix> w_o_, w_q_, w_p_;
  float tau_ = 1.0F;  // exp(log_tau)
  // cls_mlp.0 (ReLU epilogue), cls_mlp.3; null for cosine.
  std::unique_ptr<backend::PackedMatrix> mlp_in_, mlp_out_;
};

}  // namespace s1::heads
