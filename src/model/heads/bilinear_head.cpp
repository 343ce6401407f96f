#include "model/heads/bilinear_head.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "model/checkpoint/checkpoint.h"
#include "model/checkpoint/load_error.h"

namespace s1::heads {
namespace {

std::vector<float> read_projection(const checkpoint::Checkpoint& file, const std::filesystem::path& path,
                                   std::string_view name, std::size_t hidden, std::size_t& projection_dim) {
  const checkpoint::TensorView& tensor = file.get(name);
  if (tensor.shape.size() != 2 || tensor.shape[1] != static_cast<int64_t>(hidden) || tensor.shape[0] < 1 ||
      (projection_dim != 0 && tensor.shape[0] != static_cast<int64_t>(projection_dim))) {
    throw checkpoint::LoadError(path.string() + ": tensor '" + std::string(name) + "' has shape " +
                                checkpoint::shape_to_string(tensor.shape) + "; the head needs [projection_dim, " +
                                std::to_string(hidden) + "] (the model's hidden size), one shape for both");
  }
  projection_dim = static_cast<std::size_t>(tensor.shape[0]);
  std::vector<float> values = checkpoint::to_float(tensor);
  if (!std::ranges::all_of(values, [](float v) { return std::isfinite(v); })) {
    throw checkpoint::LoadError(path.string() + ": tensor '" + std::string(name) + "' holds a non-finite weight");
  }
  return values;
}

}  // namespace

BilinearHead BilinearHead::from_file(const std::filesystem::path& path, std::string_view decision_name,
                                     std::string_view candidate_name, std::size_t hidden, backend::Backend& backend) {
  const checkpoint::Checkpoint file = checkpoint::Checkpoint::open(path);
  std::size_t projection_dim = 0;
  std::vector<float> decision = read_projection(file, path, decision_name, hidden, projection_dim);
  std::vector<float> candidate = read_projection(file, path, candidate_name, hidden, projection_dim);
  return BilinearHead(std::move(decision), std::move(candidate), hidden, backend);
}

BilinearHead::BilinearHead(std::vector<float> decision_weight, std::vector<float> candidate_weight, std::size_t hidden,
                           backend::Backend& backend)
    : hidden_(hidden), projection_dim_(hidden == 0 ? 0 : decision_weight.size() / hidden), backend_(&backend) {
  if (hidden == 0 || projection_dim_ == 0 || decision_weight.size() != projection_dim_ * hidden ||
      candidate_weight.size() != decision_weight.size()) {
    throw std::invalid_argument("bilinear head: both weights must be [projection_dim, hidden]");
  }
  const auto pack = [&](std::vector<float>& weight) {
    const backend::Tensor tensor = backend::Tensor::of(std::span<const float>(weight), {projection_dim_, hidden_});
    return backend_->pack_matmul(tensor, {}, backend::Arithmetic::fp32, backend::Activation::none);
  };
  decision_ = pack(decision_weight);
  candidate_ = pack(candidate_weight);
}

BilinearHead::~BilinearHead() = default;
BilinearHead::BilinearHead(BilinearHead&&) noexcept = default;
BilinearHead& BilinearHead::operator=(BilinearHead&&) noexcept = default;

std::vector<float> BilinearHead::logits(std::span<const float> decision_state,
                                        std::span<const float> candidate_states) const {
  if (decision_state.size() != hidden_ || candidate_states.empty() || candidate_states.size() % hidden_ != 0) {
    throw std::invalid_argument("bilinear head: a decision state of " + std::to_string(hidden_) +
                                " values and at least one candidate state of as many are needed");
  }
  const std::size_t candidates = candidate_states.size() / hidden_;
  backend::Tensor decision = backend_->allocate(backend::DType::fp32, std::array{std::size_t{1}, projection_dim_});
  backend::Tensor projected = backend_->allocate(backend::DType::fp32, std::array{candidates, projection_dim_});
  backend_->matmul(
      {backend_->upload(backend::Tensor::of(decision_state, {1, hidden_})), decision_.get(), false, decision});
  backend_->matmul({backend_->upload(backend::Tensor::of(candidate_states, {candidates, hidden_})), candidate_.get(),
                    false, projected});
  // The dot products as one more product, with the projected Decision state as a one-row weight.
  const auto dot = backend_->pack_matmul(decision, {}, backend::Arithmetic::fp32, backend::Activation::none);
  backend::Tensor dots = backend_->allocate(backend::DType::fp32, std::array{candidates, std::size_t{1}});
  backend_->matmul({projected, dot.get(), false, dots});
  // The reference divides by the Python float √projection_dim in fp32.
  const auto scale = static_cast<float>(std::sqrt(static_cast<double>(projection_dim_)));
  std::vector<float> out(dots.read_values<float>().begin(), dots.read_values<float>().end());
  for (float& logit : out) logit /= scale;
  return out;
}

}  // namespace s1::heads
