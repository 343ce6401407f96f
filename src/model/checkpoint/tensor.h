#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace s1::checkpoint {

// Element types a safetensors header may name. Only F32/F16/BF16 convert to float; the rest are
// readable as raw bytes so that a checkpoint carrying e.g. an I64 position-id buffer still loads.
enum class DType {
  kBool,
  kU8,
  kI8,
  kF8E4M3,
  kF8E5M2,
  kI16,
  kU16,
  kF16,
  kBF16,
  kI32,
  kU32,
  kF32,
  kF64,
  kI64,
  kU64,
  // GGUF only (never a safetensors dtype): ggml's Q8_0 and Q4_K blocks, kept quantised so that
  // matmuls can read them as they are (backend::DType::q8_0, q4_k); to_float dequantises them.
  kQ8_0,
  kQ4_K,
};

// The safetensors spelling ("F32", "BF16", ...); nullopt for anything else.
std::optional<DType> parse_dtype(std::string_view name);
std::string_view dtype_name(DType dtype);
// Bytes per element; 0 for the quantised GGUF dtypes.
std::size_t dtype_size(DType dtype);

// A tensor inside a mapped checkpoint file; `bytes` points into the mapping (no copy) and is
// little-endian, row-major. Valid as long as the Checkpoint it came from lives.
struct TensorView {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::span<const std::byte> bytes;

  int64_t element_count() const;
};

// Copies a F32, F16 or BF16 tensor into floats, or dequantises a Q8_0 or Q4_K one (model code
// reorders weights at load anyway); throws LoadError naming the tensor for any other dtype.
std::vector<float> to_float(const TensorView& tensor);

float half_to_float(uint16_t bits);
float bfloat16_to_float(uint16_t bits);

// "[2, 3]" — for error messages.
std::string shape_to_string(std::span<const int64_t> shape);

}  // namespace s1::checkpoint
