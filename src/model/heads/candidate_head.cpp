#include "model/heads/candidate_head.h"

#include <cmath>
#include <stdexcept>

#include "model/checkpoint/load_error.h"
#include "model/common/checkpoint_tensors.h"

namespace s1::heads {
namespace {

constexpr float layer_norm_eps = 1e-5F;  // torch.nn.LayerNorm's default, as the head builds its norms

backend::Tensor vector(const checkpoint::Checkpoint& weights, const std::string& name, std::size_t size) {
  const int64_t shape[] = {static_cast<int64_t>(size)};
  return model::fp32_tensor(weights.get(name, shape));
}

std::unique_ptr<backend::PackedMatrix> linear(backend::Backend& backend, const checkpoint::Checkpoint& weights,
                                              const std::string& name, std::size_t in, std::size_t out,
                                              const backend::Tensor& bias = {}) {
  const int64_t shape[] = {static_cast<int64_t>(out), static_cast<int64_t>(in)};
  return backend.pack_matmul(model::checkpoint_tensor(weights.get(name, shape)), bias, backend::Arithmetic::fp32,
                             backend::Activation::none);
}

std::size_t head_dim_of(const checkpoint::Checkpoint& weights, const std::string& prefix, std::size_t hidden) {
  const checkpoint::TensorView& key = weights.get(prefix + "key.weight");
  if (key.shape.size() != 2 || key.shape[0] < 1 || key.shape[1] != static_cast<int64_t>(hidden)) {
    throw checkpoint::LoadError(weights.source().string() + ": tensor '" + prefix + "key.weight' has shape " +
                                checkpoint::shape_to_string(key.shape) + "; the candidate head needs [head_dim, " +
                                std::to_string(hidden) + "] (the model's hidden size)");
  }
  return static_cast<std::size_t>(key.shape[0]);
}

}  // namespace

CandidateHead::CandidateHead(const checkpoint::Checkpoint& weights, const std::string& prefix, std::size_t hidden,
                             backend::Backend& backend)
    : backend_(&backend),
      hidden_(hidden),
      head_dim_(head_dim_of(weights, prefix, hidden)),
      candidate_norm_weight_(vector(weights, prefix + "candidate_norm.weight", hidden)),
      candidate_norm_bias_(vector(weights, prefix + "candidate_norm.bias", hidden)),
      query_norm_weight_(vector(weights, prefix + "query_norm.weight", hidden)),
      query_norm_bias_(vector(weights, prefix + "query_norm.bias", hidden)),
      key_(linear(backend, weights, prefix + "key.weight", hidden, head_dim_)),
      query_(linear(backend, weights, prefix + "query.weight", hidden, head_dim_)),
      candidate_mlp_(linear(backend, weights, prefix + "candidate_mlp.weight", hidden, head_dim_,
                            vector(weights, prefix + "candidate_mlp.bias", head_dim_))),
      query_mlp_(linear(backend, weights, prefix + "query_mlp.weight", hidden, head_dim_)),
      scalar_(linear(backend, weights, prefix + "scalar.weight", head_dim_, 1)) {}

CandidateHead::~CandidateHead() = default;
CandidateHead::CandidateHead(CandidateHead&&) noexcept = default;
CandidateHead& CandidateHead::operator=(CandidateHead&&) noexcept = default;

std::vector<std::string> CandidateHead::tensor_names(const std::string& prefix) {
  std::vector<std::string> names;
  for (const char* name :
       {"candidate_norm.weight", "candidate_norm.bias", "query_norm.weight", "query_norm.bias", "key.weight",
        "query.weight", "candidate_mlp.weight", "candidate_mlp.bias", "query_mlp.weight", "scalar.weight"}) {
    names.push_back(prefix + name);
  }
  return names;
}

backend::Tensor CandidateHead::normed(const backend::Tensor& rows, const backend::Tensor& weight,
                                      const backend::Tensor& bias) const {
  const std::size_t shape[] = {rows.rows(), hidden_};
  const backend::Tensor y = backend_->allocate(backend::DType::fp32, shape);
  backend_->norm({.kind = backend::NormCall::Kind::layer,
                  .x = rows,
                  .weight = weight,
                  .bias = bias,
                  .eps = layer_norm_eps,
                  .y = y});
  return y;
}

backend::Tensor CandidateHead::project(const backend::Tensor& rows, const backend::PackedMatrix& weight) const {
  const std::size_t shape[] = {rows.rows(), weight.out_features()};
  const backend::Tensor y = backend_->allocate(backend::DType::fp32, shape);
  backend_->matmul({.x = rows, .weight = &weight, .y = y});
  return y;
}

std::vector<float> CandidateHead::logits(std::span<const float> query_state,
                                         std::span<const float> candidate_states) const {
  if (query_state.size() != hidden_ || candidate_states.empty() || candidate_states.size() % hidden_ != 0) {
    throw std::invalid_argument("candidate head: a query state of " + std::to_string(hidden_) +
                                " values and at least one candidate state of as many are needed");
  }
  const std::size_t candidates = candidate_states.size() / hidden_;
  const backend::Tensor c = normed(backend_->upload(backend::Tensor::of(candidate_states, {candidates, hidden_})),
                                   candidate_norm_weight_, candidate_norm_bias_);
  const backend::Tensor q =
      normed(backend_->upload(backend::Tensor::of(query_state, {1, hidden_})), query_norm_weight_, query_norm_bias_);
  // The bilinear term as one more product, with the projected query as a one-row weight.
  const auto projected_query =
      backend_->pack_matmul(project(q, *query_), {}, backend::Arithmetic::fp32, backend::Activation::none);
  const backend::Tensor bilinear = project(project(c, *key_), *projected_query);
  // Mq q is one row, broadcast over the candidates onto Mc c + bc before the GELU.
  const backend::Tensor mq = project(q, *query_mlp_);
  backend::Tensor hidden = project(c, *candidate_mlp_);
  {
    const std::span<const float> row = mq.read_values<float>();
    std::span<float> values = hidden.values<float>();
    for (std::size_t i = 0; i < candidates; ++i) {
      for (std::size_t j = 0; j < head_dim_; ++j) values[i * head_dim_ + j] += row[j];
    }
  }
  backend_->activate(backend::Activation::gelu, hidden, hidden);
  const backend::Tensor nonlinear = project(hidden, *scalar_);
  // The reference divides by the Python float √head_dim in fp32.
  const auto scale = static_cast<float>(std::sqrt(static_cast<double>(head_dim_)));
  const std::span<const float> b = bilinear.read_values<float>();
  const std::span<const float> n = nonlinear.read_values<float>();
  std::vector<float> out(candidates);
  for (std::size_t i = 0; i < candidates; ++i) out[i] = b[i] / scale + n[i];
  return out;
}

}  // namespace s1::heads
