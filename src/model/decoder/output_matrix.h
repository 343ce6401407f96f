#pragma once
// A matrix of output rows [rows, hidden]: an LM head (or tied embedding table), or a separate readout
// matrix loaded from a side file. Label readouts dot a few rows with one hidden state; full-vocabulary
// readouts multiply every row, through a packed linear layer built on first use. A bf16 table can be
// read in place from its checkpoint's mapping (half the bytes of an fp32 copy, issue 17 item 3).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string_view>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/linear.h"
#include "backend/cpu/precision.h"
#include "model/checkpoint/tensor.h"

namespace s1::decoder {

class OutputMatrix {
 public:
  // tensor: [rows, hidden] F32/F16/BF16 (copied to fp32). Throws checkpoint::LoadError on a shape
  // that is not 2-D or does not have `hidden` columns.
  OutputMatrix(const checkpoint::TensorView& tensor, std::size_t hidden, backend::cpu::Precision precision);
  // The same, except that a BF16 tensor is read in place: `mapping` keeps its bytes alive (the
  // checkpoint it came from). Other dtypes are copied as above.
  OutputMatrix(const checkpoint::TensorView& tensor, std::size_t hidden, backend::cpu::Precision precision,
               std::shared_ptr<const void> mapping);
  // A readout matrix kept beside a headless backbone (D3, pplx-decider): tensor `name` of the
  // safetensors file `path`. Throws checkpoint::LoadError naming the file and the tensor.
  static OutputMatrix from_side_file(const std::filesystem::path& path, std::string_view name, std::size_t hidden,
                                     backend::cpu::Precision precision);
  ~OutputMatrix();
  OutputMatrix(OutputMatrix&&) noexcept;
  OutputMatrix& operator=(OutputMatrix&&) noexcept;

  [[nodiscard]] std::size_t rows() const { return rows_; }
  [[nodiscard]] std::size_t hidden() const { return hidden_; }
  // Row `index` widened to fp32 into out (hidden() values); std::out_of_range for index ≥ rows().
  void copy_row(std::size_t index, std::span<float> out) const;
  // Every row as fp32, for a matrix held as an fp32 copy; std::logic_error for one read in place.
  [[nodiscard]] std::span<const float> values() const;

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
  std::vector<float> values_;  // the fp32 copy, or empty when in_place_ holds the rows
  backend::Tensor in_place_;   // [rows, hidden] bf16, a read-only view into the checkpoint
  mutable std::once_flag packed_once_;
  mutable std::unique_ptr<backend::cpu::PackedLinear> packed_;
};

}  // namespace s1::decoder
