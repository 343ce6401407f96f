#pragma once
// The LAYA decision model (laya==0.3.20 DecisionModel, convaiinnovations/laya): a ModernBERT encoder
// (from the family table), then LAYA's decision head on the backend: per row hidden +
// type_emb[question type], a stack of pre-norm transformer layers (nn.TransformerEncoderLayer: d/64
// heads, ReLU feed-forward 4·d, LayerNorm eps 1e-5, padding keys masked), a scorer (LayerNorm →
// Linear → GELU → Linear to 1) at every [MASK] marker, and an act head (Linear d+4 → 256 → GELU →
// n_act) over the [CLS] state and four features of the marker softmax.
//
// A checkpoint directory holds rl_agent_config.json, model.safetensors (encoder.*, type_emb, head.*,
// scorer.*, act_head.*, and a legacy `temperature` buffer laya ignores) and encoder/config.json.
// Rows (one per question) run unpadded, back to back, through encoder and head alike.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/checkpoint/checkpoint.h"
#include "model/common/backend_choice.h"
#include "model/encoder/encoder.h"

namespace s1::laya {

// The members of rl_agent_config.json the model and its contract use. laya's file also carries
// training settings; those are not read.
struct AgentConfig {
  int64_t head_layers = 2;
  int64_t action_count = 2;  // len(act_costs) + 1
  int64_t max_len = 512;
  int64_t head_max_len = 192;
  std::vector<double> temperature;                       // per question type: choice, score, noul
  std::map<std::string, double> temperature_by_options;  // "<kind>:<bucket>" → T, as shipped
};

// Throws checkpoint::LoadError naming the file and key for a missing or ill-typed member.
AgentConfig read_agent_config(const std::filesystem::path& file);

enum class QuestionKind : int { choice = 0, score = 1, noul = 2 };  // laya's QTYPES, the type_emb row

struct Row {
  std::span<const int32_t> ids;
  std::span<const std::size_t> markers;  // positions of the [MASK] markers, in option order
  QuestionKind kind = QuestionKind::choice;
};

class LayaModel {
 public:
  // Loads encoder/config.json, rl_agent_config.json and model.safetensors from `dir`; every tensor is
  // checked for shape. Matmuls (and attention) in `arithmetic`. Throws checkpoint::LoadError.
  LayaModel(const std::filesystem::path& dir, backend::Arithmetic arithmetic,
            backend::Backend& backend = model::default_backend());

  const AgentConfig& agent_config() const { return agent_config_; }
  const encoder::EncoderInfo& encoder_info() const { return encoder_->info(); }

  // One raw scorer logit per marker of each row (laya's `logits` before temperature).
  // std::invalid_argument for an empty row, a row longer than max_len or a marker outside its row.
  std::vector<std::vector<float>> marker_logits(std::span<const Row> rows);

  // The act head over the rows of the last marker_logits() call: softmax(act_logits)[0] per row,
  // laya's `act_probability`. The System One wire has no member for it; tools and tests read it.
  std::vector<float> act_probabilities();

 private:
  struct HeadLayer {
    backend::Tensor norm1_weight, norm1_bias, norm2_weight, norm2_bias;
    std::unique_ptr<backend::PackedMatrix> in_projection;  // [q | k | v]
    std::unique_ptr<backend::PackedMatrix> out_projection;
    std::unique_ptr<backend::PackedMatrix> linear1;  // ReLU epilogue
    std::unique_ptr<backend::PackedMatrix> linear2;
  };

  LayaModel(const std::filesystem::path& dir, backend::Arithmetic arithmetic, backend::Backend& backend,
            const checkpoint::Checkpoint& weights);
  std::unique_ptr<backend::PackedMatrix> load_linear(const checkpoint::Checkpoint& weights, const std::string& name,
                                                     int64_t in, int64_t out, backend::Activation activation) const;
  [[nodiscard]] backend::Tensor allocate(backend::DType dtype, std::size_t rows, std::size_t columns) const;
  // The dtype the norms write for the next matmul: bf16 when the matmuls run in bf16 (no conversion
  // pass), else fp32.
  [[nodiscard]] backend::DType matmul_input_dtype() const;
  // A decision layer over `hidden` ([rows, d], the packed rows of `segments`); with `kept` (i32 row
  // indices), its row-wise half after attention runs on those rows alone and their states are returned.
  [[nodiscard]] backend::Tensor run_head_layer(const HeadLayer& layer, const backend::Tensor& hidden,
                                               std::span<const backend::AttentionSegment> segments,
                                               const backend::Tensor& kept) const;
  // The layer after attention and its output projection (norm, feed-forward, residual), in place.
  void finish_head_layer(const HeadLayer& layer, const backend::Tensor& hidden) const;

  backend::Backend* backend_;
  backend::Arithmetic arithmetic_;
  AgentConfig agent_config_;
  std::unique_ptr<encoder::Encoder> encoder_;
  std::size_t width_ = 0;              // d
  std::vector<float> type_embedding_;  // [3, d]
  std::vector<HeadLayer> head_layers_;
  backend::Tensor scorer_norm_weight_, scorer_norm_bias_;
  std::unique_ptr<backend::PackedMatrix> scorer_hidden_;  // GELU epilogue
  std::unique_ptr<backend::PackedMatrix> scorer_output_;
  std::unique_ptr<backend::PackedMatrix> act_hidden_;  // GELU epilogue
  std::unique_ptr<backend::PackedMatrix> act_output_;

  // State of the last marker_logits() call: per row its logits, and the rows read after the head
  // (per question its [CLS] then its markers) with each question's first.
  std::vector<std::vector<float>> last_logits_;
  backend::Tensor kept_hidden_;
  std::vector<std::size_t> first_kept_;
};

}  // namespace s1::laya
