#include "model/decoder/output_matrix.h"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>

#include "model/checkpoint/checkpoint.h"
#include "model/checkpoint/load_error.h"

namespace s1::decoder {

OutputMatrix::OutputMatrix(const checkpoint::TensorView& tensor, std::size_t hidden, backend::cpu::Precision precision)
    : OutputMatrix(tensor, hidden, precision, nullptr) {}

OutputMatrix::OutputMatrix(const checkpoint::TensorView& tensor, std::size_t hidden, backend::cpu::Precision precision,
                           std::shared_ptr<const void> mapping)
    : hidden_(hidden), precision_(precision) {
  if (tensor.shape.size() != 2 || tensor.shape[1] != static_cast<int64_t>(hidden) || tensor.shape[0] <= 0) {
    throw checkpoint::LoadError("tensor '" + tensor.name + "' has shape " + checkpoint::shape_to_string(tensor.shape) +
                                ", expected [rows, " + std::to_string(hidden) + "]");
  }
  rows_ = static_cast<std::size_t>(tensor.shape[0]);
  // bf16 widens to fp32 exactly, so a readout from the mapped rows equals one from a copy.
  if (mapping != nullptr && tensor.dtype == checkpoint::DType::kBF16) {
    const std::array<std::size_t, 2> shape{rows_, hidden_};
    in_place_ = backend::Tensor::view_read_only(tensor.bytes.data(), backend::DType::bf16, shape, std::move(mapping));
  } else {
    values_ = checkpoint::to_float(tensor);
  }
}

OutputMatrix OutputMatrix::from_side_file(const std::filesystem::path& path, std::string_view name, std::size_t hidden,
                                          backend::cpu::Precision precision) {
  const checkpoint::Checkpoint file = checkpoint::Checkpoint::open(path);
  const checkpoint::TensorView& tensor = file.get(name);  // its errors name the file already
  try {
    return OutputMatrix(tensor, hidden, precision);
  } catch (const checkpoint::LoadError& error) {
    throw checkpoint::LoadError(path.string() + ": " + error.what());
  }
}

OutputMatrix::~OutputMatrix() = default;
OutputMatrix::OutputMatrix(OutputMatrix&& other) noexcept
    : rows_(other.rows_),
      hidden_(other.hidden_),
      precision_(other.precision_),
      values_(std::move(other.values_)),
      in_place_(std::move(other.in_place_)),
      packed_(std::move(other.packed_)) {}
OutputMatrix& OutputMatrix::operator=(OutputMatrix&& other) noexcept {
  rows_ = other.rows_;
  hidden_ = other.hidden_;
  precision_ = other.precision_;
  values_ = std::move(other.values_);
  in_place_ = std::move(other.in_place_);
  packed_ = std::move(other.packed_);
  return *this;
}

void OutputMatrix::copy_row(std::size_t index, std::span<float> out) const {
  if (index >= rows_) throw std::out_of_range("output row id out of range");
  if (out.size() != hidden_) throw std::invalid_argument("output row destination has the wrong width");
  if (in_place_.defined()) {
    const std::uint16_t* row = in_place_.read<std::uint16_t>() + index * hidden_;
    for (std::size_t i = 0; i < hidden_; ++i) out[i] = backend::bf16_to_float(row[i]);
  } else {
    std::copy_n(values_.begin() + static_cast<std::ptrdiff_t>(index * hidden_), hidden_, out.begin());
  }
}

std::span<const float> OutputMatrix::values() const {
  if (in_place_.defined()) throw std::logic_error("output matrix read in place has no fp32 values");
  return values_;
}

std::vector<double> OutputMatrix::gather_logits(std::span<const float> hidden_state,
                                                std::span<const int32_t> ids) const {
  if (hidden_state.size() != hidden_) throw std::invalid_argument("hidden state has the wrong width");
  std::vector<double> logits;
  logits.reserve(ids.size());
  for (const int32_t id : ids) {
    if (id < 0 || static_cast<std::size_t>(id) >= rows_) throw std::out_of_range("output row id out of range");
    const auto row = static_cast<std::size_t>(id);
    double sum = 0.0;
    if (in_place_.defined()) {
      const std::uint16_t* weights = in_place_.read<std::uint16_t>() + row * hidden_;
      for (std::size_t i = 0; i < hidden_; ++i)
        sum += static_cast<double>(backend::bf16_to_float(weights[i])) * hidden_state[i];
    } else {
      const float* weights = values_.data() + row * hidden_;
      for (std::size_t i = 0; i < hidden_; ++i) sum += static_cast<double>(weights[i]) * hidden_state[i];
    }
    logits.push_back(sum);
  }
  return logits;
}

std::vector<float> OutputMatrix::all_logits(std::span<const float> hidden_rows) const {
  if (hidden_rows.empty() || hidden_rows.size() % hidden_ != 0) {
    throw std::invalid_argument("hidden rows are not a whole number of rows");
  }
  // Packing the whole head costs as much memory again as the head itself, so only readouts that
  // need every logit (candidate log-likelihoods, the logits tool) pay for it.
  std::call_once(packed_once_, [&] {
    std::vector<float> widened;
    if (in_place_.defined()) {
      widened.resize(rows_ * hidden_);
      for (std::size_t r = 0; r < rows_; ++r) copy_row(r, std::span(widened).subspan(r * hidden_, hidden_));
    }
    packed_ = std::make_unique<backend::cpu::PackedLinear>(in_place_.defined() ? widened : values_,
                                                           std::span<const float>(), hidden_, rows_, precision_);
  });
  std::vector<float> logits(hidden_rows.size() / hidden_ * rows_);
  packed_->forward(hidden_rows, logits);
  return logits;
}

}  // namespace s1::decoder
