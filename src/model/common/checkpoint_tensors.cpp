#include "model/common/checkpoint_tensors.h"

#include <algorithm>
#include <string>
#include <vector>

#include "model/checkpoint/load_error.h"

namespace s1::model {
namespace {

std::vector<std::size_t> shape_of(const checkpoint::TensorView& tensor) {
  if (tensor.shape.size() > backend::max_rank) {
    throw checkpoint::LoadError("tensor '" + tensor.name + "' has rank " + std::to_string(tensor.shape.size()) +
                                "; backend tensors have at most " + std::to_string(backend::max_rank));
  }
  std::vector<std::size_t> shape;
  for (const int64_t size : tensor.shape) shape.push_back(static_cast<std::size_t>(size));
  return shape;
}

}  // namespace

backend::Tensor checkpoint_tensor(const checkpoint::TensorView& tensor) {
  const std::vector<std::size_t> shape = shape_of(tensor);
  switch (tensor.dtype) {
    case checkpoint::DType::kF32:
      return backend::Tensor::view_read_only(tensor.bytes.data(), backend::DType::fp32, shape);
    case checkpoint::DType::kBF16:
      return backend::Tensor::view_read_only(tensor.bytes.data(), backend::DType::bf16, shape);
    default:
      return fp32_tensor(tensor);
  }
}

backend::Tensor fp32_tensor(const checkpoint::TensorView& tensor) {
  const std::vector<std::size_t> shape = shape_of(tensor);
  const std::vector<float> values = checkpoint::to_float(tensor);
  backend::Tensor owned = backend::Tensor::empty(backend::DType::fp32, shape);
  std::ranges::copy(values, owned.values<float>().begin());
  return owned;
}

}  // namespace s1::model
