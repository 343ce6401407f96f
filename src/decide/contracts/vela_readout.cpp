#include "decide/contracts/vela_readout.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "backend/cpu/layer_norm.h"
#include "model/checkpoint/load_error.h"

namespace s1::decide {
namespace {

constexpr float layer_norm_eps = 1e-5F;    // torch.nn.LayerNorm's default, as the package builds it
constexpr float normalize_eps = 1e-12F;    // torch.nn.functional.normalize's default

// The span readout's tensors: part of the released file, read only by span questions.
const std::set<std::string, std::less<>> span_tensors = {"w_t.weight", "w_t.bias", "w_e.weight", "w_e.bias",
                                                         "log_tau_span"};

std::vector<float> vector(const checkpoint::Checkpoint& weights, const std::string& name, std::size_t size) {
  const int64_t shape[] = {static_cast<int64_t>(size)};
  return checkpoint::to_float(weights.get(name, shape));
}

backend::cpu::PackedLinear linear(const checkpoint::Checkpoint& weights, const std::string& name, std::size_t in,
                                  std::size_t out) {
  const int64_t shape[] = {static_cast<int64_t>(out), static_cast<int64_t>(in)};
  return backend::cpu::PackedLinear(checkpoint::to_float(weights.get(name + ".weight", shape)),
                                    vector(weights, name + ".bias", out), in, out, backend::cpu::Precision::fp32);
}

float scalar(const checkpoint::Checkpoint& weights, const std::string& name) {
  const checkpoint::TensorView& tensor = weights.get(name);
  const std::vector<float> value = checkpoint::to_float(tensor);
  if (value.size() != 1) {
    throw checkpoint::LoadError(weights.source().string() + ": tensor '" + name + "' has shape " +
                                checkpoint::shape_to_string(tensor.shape) + ", expected a scalar");
  }
  return value[0];
}

void normalize(std::span<float> row) {
  double squares = 0.0;
  for (const float value : row) squares += static_cast<double>(value) * value;
  const float scale = 1.0F / std::max(static_cast<float>(std::sqrt(squares)), normalize_eps);
  for (float& value : row) value *= scale;
}

}  // namespace

VelaMarkerHead::VelaMarkerHead(const checkpoint::Checkpoint& weights, std::size_t hidden, std::size_t projection,
                               VelaReadout readout, std::string_view encoder_prefix)
    : hidden_(hidden),
      projection_(projection),
      readout_(readout),
      norm_weight_(vector(weights, "norm.weight", hidden)),
      norm_bias_(vector(weights, "norm.bias", hidden)),
      w_o_(linear(weights, "w_o", hidden, projection)),
      w_q_(linear(weights, "w_q", hidden, projection)),
      w_p_(linear(weights, "w_p", hidden, projection)) {
  tau_ = std::exp(scalar(weights, "log_tau"));
  std::set<std::string, std::less<>> used = {"norm.weight", "norm.bias", "w_o.weight", "w_o.bias", "w_q.weight",
                                             "w_q.bias",    "w_p.weight", "w_p.bias",  "log_tau"};
  if (readout != VelaReadout::cosine) {
    mlp_.push_back(linear(weights, "cls_mlp.0", hidden, 2 * hidden));
    mlp_.push_back(linear(weights, "cls_mlp.3", 2 * hidden, 1));
    used.insert({"cls_mlp.0.weight", "cls_mlp.0.bias", "cls_mlp.3.weight", "cls_mlp.3.bias"});
  }
  for (const std::string_view name : weights.names()) {
    if (name.starts_with(encoder_prefix) || used.contains(name) || span_tensors.contains(name)) continue;
    throw checkpoint::LoadError(weights.source().string() + ": tensor '" + std::string(name) +
                                "' is neither the encoder's nor a Vela 2.0 marker-head tensor this readout uses");
  }
}

std::vector<std::vector<float>> VelaMarkerHead::option_logits(std::span<const float> hidden,
                                                              std::span<const VelaQuestionSlots> questions) const {
  const std::size_t rows = hidden.size() / hidden_;
  const auto row = [&](std::size_t index) { return hidden.subspan(index * hidden_, hidden_); };
  std::vector<std::vector<float>> logits;
  logits.reserve(questions.size());
  std::vector<float> normed(hidden_), part(projection_), query(projection_);
  for (const VelaQuestionSlots& question : questions) {
    std::vector<float> markers;  // the option rows, gathered
    for (const std::size_t position : question.options) {
      if (position >= rows) throw std::out_of_range("Vela option marker outside its sequence");
      const std::span<const float> source = row(position);
      markers.insert(markers.end(), source.begin(), source.end());
    }
    const std::size_t count = question.options.size();
    std::vector<float> scores(count, 0.0F);
    if (count == 0) {
      logits.push_back(std::move(scores));
      continue;
    }
    if (readout_ != VelaReadout::mlp) {
      std::vector<float> pooled(hidden_, 0.0F);
      if (question.pool_end > rows || question.pool_begin > question.pool_end) {
        throw std::out_of_range("Vela state pool outside its sequence");
      }
      for (std::size_t r = question.pool_begin; r < question.pool_end; ++r) {
        const std::span<const float> source = row(r);
        for (std::size_t c = 0; c < hidden_; ++c) pooled[c] += source[c];
      }
      const float pool_rows = static_cast<float>(std::max<std::size_t>(1, question.pool_end - question.pool_begin));
      for (float& value : pooled) value /= pool_rows;
      backend::cpu::layer_norm(pooled, norm_weight_, norm_bias_, layer_norm_eps, normed);
      w_p_.forward(normed, part);
      normalize(part);
      backend::cpu::layer_norm(row(question.query), norm_weight_, norm_bias_, layer_norm_eps, normed);
      w_q_.forward(normed, query);

      std::vector<float> marker_normed(markers.size()), options(count * projection_);
      backend::cpu::layer_norm(markers, norm_weight_, norm_bias_, layer_norm_eps, marker_normed);
      w_o_.forward(marker_normed, options);
      for (std::size_t i = 0; i < count; ++i) {
        const std::span<float> option(options.data() + i * projection_, projection_);
        for (std::size_t c = 0; c < projection_; ++c) option[c] += query[c];
        normalize(option);
        float cosine = 0.0F;
        for (std::size_t c = 0; c < projection_; ++c) cosine += option[c] * part[c];
        scores[i] += cosine / tau_;
      }
    }
    if (readout_ != VelaReadout::cosine) {
      std::vector<float> wide(count * 2 * hidden_), mlp(count);
      mlp_[0].forward(markers, wide);
      for (float& value : wide) value = std::max(value, 0.0F);
      mlp_[1].forward(wide, mlp);
      for (std::size_t i = 0; i < count; ++i) scores[i] += mlp[i];
    }
    logits.push_back(std::move(scores));
  }
  return logits;
}

}  // namespace s1::decide
