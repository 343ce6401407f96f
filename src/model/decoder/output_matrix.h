#pragma once
// A matrix of output rows [rows, hidden]: an LM head (or tied embedding table), or a separate readout
// matrix loaded from a side file. Label readouts dot a few rows with one hidden state; full-vocabulary
// readouts multiply every row, through a packed linear layer built on first use.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string_view>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "backend/cpu/linear.h"
#include "backend/cpu/precision.h"
#include "model/checkpoint/tensor.h"

namespace s1::decoder {

class OutputMatrix {
 public:
  // tensor: [rows, hidden] F32/F16/BF16 (copied to fp32). Throws checkpoint::LoadError on a shape
  // that is not 2-D or does not have `hidden` columns.
  OutputMatrix(const checkpoint::TensorView& tensor, std::size_t hidden, backend::cpu::Precision precision);
  // A readout matrix kept beside a headless backbone (D3, pplx-decider): tensor `name` of the
  // safetensors file `path`. Throws checkpoint::LoadError naming the file and the tensor.
  static OutputMatrix from_side_file(const std::filesystem::path& path, std::string_view name, std::size_t hidden,
                                     backend::cpu::Precision precision);
  ~OutputMatrix();
  OutputMatrix(OutputMatrix&&) noexcept;
  OutputMatrix& operator=(OutputMatrix&&) noexcept;

  [[nodiscard]] std::size_t rows() const { return rows_; }
  [[nodiscard]] std::size_t hidden() const { return hidden_; }
  [[nodiscard]] std::span<const float> row(std::size_t index) const {
    return std::span<const float>(values_).subspan(index * hidden_, hidden_);
  }
  [[nodiscard]] std::span<const float> values() const { return values_; }

  // One logit per id: row(id) · hidden_state, accumulated in double (exact enough that label
  // readouts never depend on summation order). Throws std::out_of_range for an id ≥ rows().
  [[nodiscard]] std::vector<double> gather_logits(std::span<const float> hidden_state,
                                                  std::span<const int32_t> ids) const;

  // Every row's logit for each hidden row: hidden_rows [M, hidden] → [M, rows()].
  [[nodiscard]] std::vector<float> all_logits(std::span<const float> hidden_rows) const;

 private:
  std::size_t rows_ = 0;
  std::size_t hidden_ = 0;
  backend::cpu::Precision precision_;
  std::vector<float> values_;
  mutable std::once_flag packed_once_;
  mutable std::unique_ptr<backend::cpu::PackedLinear> packed_;
};

}  // namespace s1::decoder
