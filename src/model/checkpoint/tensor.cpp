#include "model/checkpoint/tensor.h"

#include <array>
#include <bit>
#include <cstring>
#include <limits>

#include "backend/backend.h"
#include "backend/quant_blocks.h"
#include "model/checkpoint/load_error.h"

namespace s1::checkpoint {

// Tensor bytes are little-endian on disk and are reinterpreted in place.
static_assert(std::endian::native == std::endian::little, "s1serve assumes a little-endian host");

namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  std::size_t size;
};

constexpr std::array kDTypes{
    DTypeInfo{DType::kBool, "BOOL", 1},      DTypeInfo{DType::kU8, "U8", 1},
    DTypeInfo{DType::kI8, "I8", 1},          DTypeInfo{DType::kF8E4M3, "F8_E4M3", 1},
    DTypeInfo{DType::kF8E5M2, "F8_E5M2", 1}, DTypeInfo{DType::kI16, "I16", 2},
    DTypeInfo{DType::kU16, "U16", 2},        DTypeInfo{DType::kF16, "F16", 2},
    DTypeInfo{DType::kBF16, "BF16", 2},      DTypeInfo{DType::kI32, "I32", 4},
    DTypeInfo{DType::kU32, "U32", 4},        DTypeInfo{DType::kF32, "F32", 4},
    DTypeInfo{DType::kF64, "F64", 8},        DTypeInfo{DType::kI64, "I64", 8},
    DTypeInfo{DType::kU64, "U64", 8},        DTypeInfo{DType::kQ8_0, "Q8_0", 0},
    DTypeInfo{DType::kQ4_K, "Q4_K", 0},
};

const DTypeInfo& info_of(DType dtype) {
  for (const auto& info : kDTypes) {
    if (info.dtype == dtype) return info;
  }
  throw std::logic_error("unhandled DType");
}

template <typename T>
T load_unaligned(const std::byte* at) {
  // The data section starts right after the JSON header, so elements are not necessarily aligned.
  T value;
  std::memcpy(&value, at, sizeof(T));
  return value;
}

}  // namespace

std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& info : kDTypes) {
    if (info.name == name && info.size != 0) return info.dtype;  // not the GGUF-only block types
  }
  return std::nullopt;
}

std::string_view dtype_name(DType dtype) { return info_of(dtype).name; }

std::size_t dtype_size(DType dtype) { return info_of(dtype).size; }

int64_t TensorView::element_count() const {
  // Checked against the byte length at load, so the product cannot overflow here.
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

float half_to_float(uint16_t bits) { return backend::f16_to_float(bits); }

float bfloat16_to_float(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

std::vector<float> to_float(const TensorView& tensor) {
  if (tensor.dtype == DType::kQ8_0 || tensor.dtype == DType::kQ4_K) {
    std::vector<float> values(static_cast<std::size_t>(tensor.element_count()));
    backend::quant::dequantize_row(tensor.dtype == DType::kQ8_0 ? backend::DType::q8_0 : backend::DType::q4_k,
                                   tensor.bytes.data(), values.size(), values.data());
    return values;
  }
  const std::size_t count = tensor.bytes.size() / dtype_size(tensor.dtype);
  std::vector<float> values(count);
  const std::byte* data = tensor.bytes.data();
  switch (tensor.dtype) {
    case DType::kF32:
      if (count != 0) std::memcpy(values.data(), data, count * sizeof(float));
      return values;
    case DType::kF16:
      for (std::size_t i = 0; i < count; ++i) {
        values[i] = half_to_float(load_unaligned<uint16_t>(data + 2 * i));
      }
      return values;
    case DType::kBF16:
      for (std::size_t i = 0; i < count; ++i) {
        values[i] = bfloat16_to_float(load_unaligned<uint16_t>(data + 2 * i));
      }
      return values;
    default:
      throw LoadError("tensor '" + tensor.name + "' has dtype " + std::string(dtype_name(tensor.dtype)) +
                      ", which cannot be converted to float (expected F32, F16 or BF16)");
  }
}

std::string shape_to_string(std::span<const int64_t> shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

}  // namespace s1::checkpoint
