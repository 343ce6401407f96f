#pragma once
// The LAYA decision model (laya==0.3.20 DecisionModel, convaiinnovations/laya): a ModernBERT encoder,
// then per row hidden + type_emb[question type], a stack of pre-norm transformer layers
// (nn.TransformerEncoderLayer: d/64 heads, ReLU feed-forward 4·d, LayerNorm eps 1e-5, padding keys
// masked), a scorer (LayerNorm → Linear → GELU → Linear to 1) at every [MASK] marker, and an act head
// (Linear d+4 → 256 → GELU → n_act) over the [CLS] state and four features of the marker softmax.
//
// A checkpoint directory holds rl_agent_config.json, model.safetensors (encoder.*, type_emb, head.*,
// scorer.*, act_head.*, and a legacy `temperature` buffer laya ignores) and encoder/config.json.
// Rows (one per question) run unpadded, back to back, through encoder and head alike.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "backend/cpu/linear.h"
#include "backend/cpu/precision.h"
#include "model/modernbert/modernbert_model.h"

namespace s1::laya {

// The members of rl_agent_config.json the model and its contract use. laya's file also carries
// training settings; those are not read.
struct AgentConfig {
  int64_t head_layers = 2;
  int64_t action_count = 2;  // len(act_costs) + 1
  int64_t max_len = 512;
  int64_t head_max_len = 192;
  std::vector<double> temperature;                      // per question type: choice, score, noul
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
  // checked for shape. Throws checkpoint::LoadError.
  LayaModel(const std::filesystem::path& dir, backend::cpu::Precision precision);
  ~LayaModel();
  LayaModel(LayaModel&&) noexcept;
  LayaModel& operator=(LayaModel&&) noexcept;

  const AgentConfig& agent_config() const { return agent_config_; }
  const modernbert::ModernBertConfig& encoder_config() const { return encoder_.config(); }

  // One raw scorer logit per marker of each row (laya's `logits` before temperature).
  // std::invalid_argument for an empty row, a row longer than max_len or a marker outside its row.
  std::vector<std::vector<float>> marker_logits(std::span<const Row> rows);

  // The act head over the rows of the last marker_logits() call: softmax(act_logits)[0] per row,
  // laya's `act_probability`. The System One wire has no member for it; tools and tests read it.
  std::vector<float> act_probabilities();

 private:
  struct HeadLayer {
    std::vector<float> norm1_weight, norm1_bias, norm2_weight, norm2_bias;
    backend::cpu::PackedLinear in_projection;
    backend::cpu::PackedLinear out_projection;
    backend::cpu::PackedLinear linear1;
    backend::cpu::PackedLinear linear2;
  };

  LayaModel(const std::filesystem::path& dir, backend::cpu::Precision precision, const checkpoint::Checkpoint& weights);
  static backend::cpu::PackedLinear load_linear(const checkpoint::Checkpoint& weights, const std::string& name,
                                                int64_t in, int64_t out, backend::cpu::Precision precision,
                                                backend::cpu::Activation activation);
  // A decision layer over all rows; with `kept_rows`, its row-wise half (after attention) runs on those
  // rows only, gathered in order into kept_hidden_.
  void run_head_layer(const HeadLayer& layer, std::span<const std::size_t> kept_rows);
  // The layer after attention and its output projection (norm, feed-forward, residual) on the first
  // `rows` rows of hidden, [padded rows, d].
  void finish_head_layer(const HeadLayer& layer, std::vector<float>& hidden, std::size_t rows);

  AgentConfig agent_config_;
  backend::cpu::Precision precision_;
  modernbert::ModernBertEncoder encoder_;
  std::vector<float> type_embedding_;  // [3, d]
  std::vector<HeadLayer> head_layers_;
  std::vector<float> scorer_norm_weight_, scorer_norm_bias_;
  backend::cpu::PackedLinear scorer_hidden_;  // GELU fused
  backend::cpu::PackedLinear scorer_output_;
  backend::cpu::PackedLinear act_hidden_;  // GELU fused
  backend::cpu::PackedLinear act_output_;

  // State of the last marker_logits() call, and scratch.
  std::vector<backend::cpu::PackedSequence> layout_;
  std::vector<std::vector<float>> last_logits_;
  std::vector<float> hidden_, normed_, qkv_, context_, feed_forward_;
  // In bf16 the matmuls' inputs are written as bf16 by their producers instead.
  std::vector<backend::cpu::Bf16Bits> normed_bf16_, qkv_bf16_, context_bf16_, feed_forward_bf16_, kept_context_bf16_;
  // The rows read after the head, per question its [CLS] then its markers: their indices in hidden_,
  // their states after the head (row k of kept_hidden_ is kept_rows_[k]), and each question's first.
  std::vector<std::size_t> kept_rows_, first_kept_;
  std::vector<float> kept_hidden_, kept_context_;
};

}  // namespace s1::laya
