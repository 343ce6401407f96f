#include "model/heads/verbalizer_rows.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "model/checkpoint/checkpoint.h"
#include "model/checkpoint/load_error.h"

namespace s1::heads {

VerbalizerRows VerbalizerRows::from_file(const std::filesystem::path& path, std::size_t hidden) {
  const checkpoint::Checkpoint file = checkpoint::Checkpoint::open(path);
  const checkpoint::TensorView& rows = file.get("rows");
  const checkpoint::TensorView& ids = file.get("ids");
  const auto fail = [&](const std::string& what) { throw checkpoint::LoadError(path.string() + ": " + what); };
  if (rows.dtype != checkpoint::DType::kF32 || rows.shape.size() != 2 ||
      rows.shape[1] != static_cast<int64_t>(hidden)) {
    fail("tensor 'rows' must be F32 [n, " + std::to_string(hidden) + "] (the model's hidden size), not " +
         checkpoint::shape_to_string(rows.shape));
  }
  if (ids.dtype != checkpoint::DType::kI64 || ids.shape.size() != 1 || ids.shape[0] != rows.shape[0]) {
    fail("tensor 'ids' must be I64 [" + std::to_string(rows.shape[0]) + "], one id per row");
  }
  std::vector<int64_t> id_values(static_cast<std::size_t>(ids.shape[0]));
  std::memcpy(id_values.data(), ids.bytes.data(), id_values.size() * sizeof(int64_t));
  std::vector<float> row_values = checkpoint::to_float(rows);
  if (!std::ranges::all_of(row_values, [](float v) { return std::isfinite(v); })) {
    fail("tensor 'rows' holds a non-finite value");
  }
  try {
    return VerbalizerRows(std::move(row_values), std::move(id_values), hidden);
  } catch (const std::invalid_argument& error) {
    fail(error.what());
  }
  throw std::logic_error("unreachable");
}

VerbalizerRows::VerbalizerRows(std::vector<float> rows, std::vector<int64_t> ids, std::size_t hidden)
    : hidden_(hidden), rows_(std::move(rows)), ids_(std::move(ids)) {
  if (hidden == 0 || rows_.size() != ids_.size() * hidden) {
    throw std::invalid_argument("verbalizer rows: one row of the hidden size per id");
  }
  for (std::size_t i = 0; i < ids_.size(); ++i) {
    if (ids_[i] < 0 || !index_.emplace(ids_[i], i).second) {
      throw std::invalid_argument("tensor 'ids' repeats or has a negative id: " + std::to_string(ids_[i]));
    }
  }
}

std::vector<double> VerbalizerRows::logits(std::span<const float> hidden, std::span<const int64_t> ids) const {
  if (hidden.size() != hidden_) throw std::invalid_argument("verbalizer rows: hidden state of another width");
  std::vector<double> out;
  out.reserve(ids.size());
  for (const int64_t id : ids) {
    const auto found = index_.find(id);
    if (found == index_.end()) throw std::out_of_range("verbalizer rows: no row for token " + std::to_string(id));
    const float* row = rows_.data() + found->second * hidden_;
    double sum = 0.0;
    for (std::size_t i = 0; i < hidden_; ++i) sum += static_cast<double>(row[i]) * static_cast<double>(hidden[i]);
    out.push_back(sum);
  }
  return out;
}

}  // namespace s1::heads
