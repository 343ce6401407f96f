#include "model/heads/vela_readout.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>

#include "model/checkpoint/load_error.h"
#include "model/common/checkpoint_tensors.h"
#include "model/heads/layer_norm.h"

namespace s1::heads {
namespace {

constexpr float layer_norm_eps = 1e-5F;  // torch.nn.LayerNorm's default, as the package builds it
constexpr float normalize_eps = 1e-12F;  // torch.nn.functional.normalize's default

// The span readout's tensors: part of the released file, read only by span questions.
const std::set<std::string, std::less<>> span_tensors = {"w_t.weight", "w_t.bias", "w_e.weight", "w_e.bias",
                                                         "log_tau_span"};

backend::Tensor vector(const checkpoint::Checkpoint& weights, const std::string& name, std::size_t size) {
  const int64_t shape[] = {static_cast<int64_t>(size)};
  return model::fp32_tensor(weights.get(name, shape));
}

std::unique_ptr<backend::PackedMatrix> linear(backend::Backend& backend, const checkpoint::Checkpoint& weights,
                                              const std::string& name, std::size_t in, std::size_t out,
                                              backend::Activation activation = backend::Activation::none) {
  const int64_t shape[] = {static_cast<int64_t>(out), static_cast<int64_t>(in)};
  return backend.pack_matmul(model::checkpoint_tensor(weights.get(name + ".weight", shape)),
                             vector(weights, name + ".bias", out), backend::Arithmetic::fp32, activation);
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

backend::Tensor index_tensor(std::span<const std::size_t> positions) {
  const std::size_t shape[] = {positions.size()};
  backend::Tensor ids = backend::Tensor::empty(backend::DType::i32, shape);
  std::ranges::transform(positions, ids.values<std::int32_t>().begin(),
                         [](std::size_t position) { return static_cast<std::int32_t>(position); });
  return ids;
}

}  // namespace

VelaMarkerHead::VelaMarkerHead(const checkpoint::Checkpoint& weights, std::size_t hidden, std::size_t projection,
                               VelaReadout readout, std::string_view encoder_prefix, backend::Backend& backend)
    : backend_(&backend),
      hidden_(hidden),
      projection_(projection),
      readout_(readout),
      norm_weight_(vector(weights, "norm.weight", hidden)),
      norm_bias_(vector(weights, "norm.bias", hidden)),
      w_o_(linear(backend, weights, "w_o", hidden, projection)),
      w_q_(linear(backend, weights, "w_q", hidden, projection)),
      w_p_(linear(backend, weights, "w_p", hidden, projection)) {
  tau_ = std::exp(scalar(weights, "log_tau"));
  std::set<std::string, std::less<>> used = {"norm.weight", "norm.bias",  "w_o.weight", "w_o.bias", "w_q.weight",
                                             "w_q.bias",    "w_p.weight", "w_p.bias",   "log_tau"};
  if (readout != VelaReadout::cosine) {
    mlp_in_ = linear(backend, weights, "cls_mlp.0", hidden, 2 * hidden, backend::Activation::relu);
    mlp_out_ = linear(backend, weights, "cls_mlp.3", 2 * hidden, 1);
    used.insert({"cls_mlp.0.weight", "cls_mlp.0.bias", "cls_mlp.3.weight", "cls_mlp.3.bias"});
  }
  for (const std::string_view name : weights.names()) {
    if (name.starts_with(encoder_prefix) || used.contains(name) || span_tensors.contains(name)) continue;
    throw checkpoint::LoadError(weights.source().string() + ": tensor '" + std::string(name) +
                                "' is neither the encoder's nor a Vela 2.0 marker-head tensor this readout uses");
  }
}

backend::Tensor VelaMarkerHead::normed(const backend::Tensor& rows) const {
  const std::size_t shape[] = {rows.rows(), hidden_};
  const backend::Tensor y = backend_->allocate(backend::DType::fp32, shape);
  layer_norm(*backend_, rows, norm_weight_, norm_bias_, layer_norm_eps, y);
  return y;
}

backend::Tensor VelaMarkerHead::project(const backend::Tensor& rows, const backend::PackedMatrix& weight) const {
  const std::size_t shape[] = {rows.rows(), weight.out_features()};
  const backend::Tensor y = backend_->allocate(backend::DType::fp32, shape);
  backend_->matmul({.x = rows, .weight = &weight, .y = y});
  return y;
}

std::vector<float> VelaMarkerHead::cosine_scores(const backend::Tensor& hidden, const backend::Tensor& markers,
                                                 const VelaQuestionSlots& question) const {
  if (question.pool_end > hidden.rows() || question.pool_begin > question.pool_end) {
    throw std::out_of_range("Vela state pool outside its sequence");
  }
  const std::size_t one_row[] = {1, hidden_};
  const backend::Tensor pooled = backend_->allocate(backend::DType::fp32, one_row);
  const std::span<float> pool = pooled.values<float>();
  const std::span<const float> rows = hidden.read_values<float>();
  for (std::size_t r = question.pool_begin; r < question.pool_end; ++r) {
    for (std::size_t c = 0; c < hidden_; ++c) pool[c] += rows[r * hidden_ + c];
  }
  const float pool_rows = static_cast<float>(std::max<std::size_t>(1, question.pool_end - question.pool_begin));
  for (float& value : pool) value /= pool_rows;

  const backend::Tensor part_tensor = project(normed(pooled), *w_p_);
  const std::span<float> part = part_tensor.values<float>();
  normalize(part);
  const backend::Tensor query_tensor = project(normed(hidden.slice_rows(question.query, 1)), *w_q_);
  const std::span<const float> query = query_tensor.read_values<float>();
  const backend::Tensor options_tensor = project(normed(markers), *w_o_);
  const std::span<float> options = options_tensor.values<float>();

  std::vector<float> scores(markers.rows());
  for (std::size_t i = 0; i < scores.size(); ++i) {
    const std::span<float> option = options.subspan(i * projection_, projection_);
    for (std::size_t c = 0; c < projection_; ++c) option[c] += query[c];
    normalize(option);
    float cosine = 0.0F;
    for (std::size_t c = 0; c < projection_; ++c) cosine += option[c] * part[c];
    scores[i] = cosine / tau_;
  }
  return scores;
}

std::vector<std::vector<float>> VelaMarkerHead::option_logits(std::span<const float> hidden,
                                                              std::span<const VelaQuestionSlots> questions) const {
  const std::size_t rows = hidden.size() / hidden_;
  const backend::Tensor states = backend_->upload(backend::Tensor::of(hidden, {rows, hidden_}));
  std::vector<std::vector<float>> logits;
  logits.reserve(questions.size());
  for (const VelaQuestionSlots& question : questions) {
    const std::size_t count = question.options.size();
    std::vector<float> scores(count, 0.0F);
    if (count == 0) {
      logits.push_back(std::move(scores));
      continue;
    }
    if (std::ranges::any_of(question.options, [&](std::size_t position) { return position >= rows; })) {
      throw std::out_of_range("Vela option marker outside its sequence");
    }
    const std::size_t marker_shape[] = {count, hidden_};
    const backend::Tensor markers = backend_->allocate(backend::DType::fp32, marker_shape);
    backend_->gather_rows(states, index_tensor(question.options), markers);
    if (readout_ != VelaReadout::mlp) scores = cosine_scores(states, markers, question);
    if (readout_ != VelaReadout::cosine) {
      const backend::Tensor mlp = project(project(markers, *mlp_in_), *mlp_out_);
      const std::span<const float> values = mlp.read_values<float>();
      for (std::size_t i = 0; i < count; ++i) scores[i] += values[i];
    }
    logits.push_back(std::move(scores));
  }
  return logits;
}

}  // namespace s1::heads
