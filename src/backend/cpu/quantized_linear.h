#pragma once
// A q8_0 or q4_k weight matrix packed once into the quantised matmul's layout
// (quantized_layout.h), and its product with fp32 or bf16 rows: the rows are quantised to int8
// per 32-value block on the fly, then multiplied by the variant dispatch.cpp chose for this CPU.

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/quantized_layout.h"

namespace s1::backend::cpu {

class QuantizedMatrix {
 public:
  // blocks: out_features rows of in_features values of `dtype` (ggml's row-major block layout, as
  // in a GGUF file); in_features a multiple of the dtype's block. Not referenced after construction.
  QuantizedMatrix(DType dtype, std::span<const std::byte> blocks, std::span<const float> bias, std::size_t in_features,
                  std::size_t out_features);
  ~QuantizedMatrix();
  QuantizedMatrix(const QuantizedMatrix&) = delete;
  QuantizedMatrix& operator=(const QuantizedMatrix&) = delete;

  // y [rows, out_features] (fp32, or bf16 when y_bf16) = x·Wᵀ + bias (+ y when accumulating, fp32 y
  // only); x [rows, in_features] fp32, or bf16 when x_bf16.
  void run(const void* x, bool x_bf16, std::size_t rows, void* y, bool y_bf16, bool accumulate) const;

  [[nodiscard]] const QuantizedLayout& layout() const { return layout_; }

 private:
  struct FreeDeleter {
    void operator()(std::byte* data) const;
  };
  QuantizedLayout layout_;
  std::unique_ptr<std::byte, FreeDeleter> packed_;
  std::vector<float> bias_;
};

}  // namespace s1::backend::cpu
