#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "backend/backend.h"

namespace s1::backend {

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::fp32:
    case DType::i32:
      return 4;
    case DType::bf16:
    case DType::f16:
      return 2;
    case DType::i64:
      return 8;
    case DType::q8_0:
    case DType::q4_k:
      return 0;
  }
  return 0;
}

bool quantized(DType dtype) { return dtype == DType::q8_0 || dtype == DType::q4_k; }

std::size_t block_values(DType dtype) {
  switch (dtype) {
    case DType::q8_0:
      return 32;
    case DType::q4_k:
      return 256;
    default:
      return 1;
  }
}

std::size_t block_bytes(DType dtype) {
  switch (dtype) {
    case DType::q8_0:
      return 34;
    case DType::q4_k:
      return 144;
    default:
      return dtype_size(dtype);
  }
}

std::size_t storage_bytes(DType dtype, std::size_t values) { return values / block_values(dtype) * block_bytes(dtype); }

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::fp32:
      return "fp32";
    case DType::bf16:
      return "bf16";
    case DType::f16:
      return "f16";
    case DType::i32:
      return "i32";
    case DType::i64:
      return "i64";
    case DType::q8_0:
      return "q8_0";
    case DType::q4_k:
      return "q4_k";
  }
  return "unknown";
}

float bf16_to_float(std::uint16_t bits) { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }

std::uint16_t float_to_bf16(float value) {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  if (std::isnan(value)) return static_cast<std::uint16_t>((bits >> 16) | 0x40U);
  const std::uint32_t rounding = 0x7FFFU + ((bits >> 16) & 1U);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

float f16_to_float(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000U) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1FU;
  const std::uint32_t mantissa = bits & 0x3FFU;
  if (exponent == 0x1F) return std::bit_cast<float>(sign | 0x7F800000U | (mantissa << 13));  // NaN keeps its payload
  if (exponent != 0) return std::bit_cast<float>(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
  // Zero or subnormal: mantissa · 2⁻²⁴ is exact in float.
  const float magnitude = static_cast<float>(mantissa) * 0x1p-24F;
  return sign != 0 ? -magnitude : magnitude;
}

std::uint16_t float_to_f16(float value) {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000U);
  if (std::isnan(value)) return static_cast<std::uint16_t>(sign | 0x7E00U | ((bits >> 13) & 0x3FFU));
  const float magnitude = std::fabs(value);
  if (magnitude >= 65520.0F) return static_cast<std::uint16_t>(sign | 0x7C00U);  // rounds past the largest half
  if (magnitude < 0x1p-14F) {
    // Subnormal (or zero): a multiple of 2⁻²⁴, rounded to nearest even by the float addition.
    const float scaled = magnitude * 0x1p24F;
    return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(std::nearbyint(scaled)));
  }
  const std::uint32_t magnitude_bits = bits & 0x7FFFFFFFU;
  const std::uint32_t rounding = 0xFFFU + ((magnitude_bits >> 13) & 1U);
  const std::uint32_t rounded = (magnitude_bits + rounding) >> 13;  // exponent carries on mantissa overflow
  return static_cast<std::uint16_t>(sign | (rounded - ((127U - 15U) << 10)));
}

Tensor Tensor::empty(DType dtype, std::initializer_list<std::size_t> shape) {
  return empty(dtype, std::span<const std::size_t>(shape.begin(), shape.size()));
}

Tensor Tensor::empty(DType dtype, std::span<const std::size_t> shape) {
  std::size_t count = 1;
  for (const std::size_t d : shape) count *= d;
  constexpr std::size_t alignment = 64;
  if (quantized(dtype) && (shape.empty() || shape.back() % block_values(dtype) != 0))
    throw std::invalid_argument("tensor: a " + std::string(dtype_name(dtype)) + " row holds whole blocks of " +
                                std::to_string(block_values(dtype)) + " values");
  const std::size_t bytes =
      (std::max<std::size_t>(storage_bytes(dtype, count), 1) + alignment - 1) / alignment * alignment;
  void* data = std::aligned_alloc(alignment, bytes);
  if (data == nullptr) throw std::bad_alloc();
  std::memset(data, 0, bytes);
  std::shared_ptr<void> owner(data, [](void* p) { std::free(p); });
  return make(data, dtype, shape, std::move(owner), Device::cpu, true);
}

Tensor Tensor::view(void* data, DType dtype, std::span<const std::size_t> shape, std::shared_ptr<const void> owner,
                    Device device) {
  return make(data, dtype, shape, std::move(owner), device, true);
}

Tensor Tensor::view_read_only(const void* data, DType dtype, std::span<const std::size_t> shape,
                              std::shared_ptr<const void> owner, Device device) {
  // Stored without const; writable_ = false keeps data<T>() from handing the pointer out.
  return make(const_cast<void*>(data), dtype, shape, std::move(owner), device, false);
}

Tensor Tensor::make(void* data, DType dtype, std::span<const std::size_t> shape, std::shared_ptr<const void> owner,
                    Device device, bool writable) {
  if (shape.size() > max_rank) throw std::invalid_argument("tensor rank above " + std::to_string(max_rank));
  if (quantized(dtype) && (shape.empty() || shape.back() % block_values(dtype) != 0))
    throw std::invalid_argument("tensor: a " + std::string(dtype_name(dtype)) + " row holds whole blocks of " +
                                std::to_string(block_values(dtype)) + " values");
  Tensor t;
  t.data_ = data;
  t.owner_ = std::move(owner);
  t.dtype_ = dtype;
  t.device_ = device;
  t.rank_ = shape.size();
  t.writable_ = writable;
  std::size_t stride = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    t.shape_[i] = shape[i];
    t.strides_[i] = stride;
    stride *= shape[i];
  }
  return t;
}

namespace {

template <class Value>
std::array<std::size_t, 2> shape_of(std::span<Value> values, std::initializer_list<std::size_t> shape,
                                    std::size_t& rank) {
  if (shape.size() == 0) {
    rank = 1;
    return {values.size(), 0};
  }
  if (shape.size() != 2 || *shape.begin() * *(shape.begin() + 1) != values.size())
    throw std::invalid_argument("Tensor::of: a shape of two dimensions whose product is the span's size");
  rank = 2;
  return {*shape.begin(), *(shape.begin() + 1)};
}

}  // namespace

Tensor Tensor::of(std::span<float> values, std::initializer_list<std::size_t> shape) {
  std::size_t rank = 0;
  const auto dims = shape_of(values, shape, rank);
  return make(values.data(), DType::fp32, std::span(dims.data(), rank), {}, Device::cpu, true);
}
Tensor Tensor::of(std::span<const float> values, std::initializer_list<std::size_t> shape) {
  std::size_t rank = 0;
  const auto dims = shape_of(values, shape, rank);
  return make(const_cast<float*>(values.data()), DType::fp32, std::span(dims.data(), rank), {}, Device::cpu, false);
}
Tensor Tensor::of(std::span<std::uint16_t> bf16_values, std::initializer_list<std::size_t> shape) {
  std::size_t rank = 0;
  const auto dims = shape_of(bf16_values, shape, rank);
  return make(bf16_values.data(), DType::bf16, std::span(dims.data(), rank), {}, Device::cpu, true);
}
Tensor Tensor::of(std::span<const std::uint16_t> bf16_values, std::initializer_list<std::size_t> shape) {
  std::size_t rank = 0;
  const auto dims = shape_of(bf16_values, shape, rank);
  return make(const_cast<std::uint16_t*>(bf16_values.data()), DType::bf16, std::span(dims.data(), rank), {},
              Device::cpu, false);
}
Tensor Tensor::of(std::span<const std::int32_t> values) {
  const std::array<std::size_t, 1> dims{values.size()};
  return make(const_cast<std::int32_t*>(values.data()), DType::i32, dims, {}, Device::cpu, false);
}
Tensor Tensor::of(std::span<const std::int64_t> values) {
  const std::array<std::size_t, 1> dims{values.size()};
  return make(const_cast<std::int64_t*>(values.data()), DType::i64, dims, {}, Device::cpu, false);
}

std::size_t Tensor::row_size() const {
  std::size_t size = 1;
  for (std::size_t i = 1; i < rank_; ++i) size *= shape_[i];
  return size;
}

std::size_t Tensor::elements() const { return rank_ == 0 ? 0 : rows() * row_size(); }

bool Tensor::contiguous() const {
  std::size_t expected = 1;
  for (std::size_t i = rank_; i-- > 0;) {
    if (shape_[i] != 1 && strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

void Tensor::check_access(std::size_t value_size, bool write) const {
  if (data_ == nullptr) throw std::invalid_argument("tensor: access to an undefined tensor");
  if (value_size != dtype_size(dtype_))
    throw std::invalid_argument("tensor: " + std::string(dtype_name(dtype_)) + " values read as " +
                                std::to_string(value_size) + "-byte values");
  if (write && !writable_) throw std::invalid_argument("tensor: write access to read-only values");
}

std::span<const std::byte> Tensor::read_bytes() const {
  if (data_ == nullptr) throw std::invalid_argument("tensor: access to an undefined tensor");
  check_contiguous();
  return {static_cast<const std::byte*>(data_), storage_bytes(dtype_, elements())};
}

void Tensor::check_contiguous() const {
  if (!contiguous()) throw std::invalid_argument("tensor: a contiguous tensor is needed here");
}

Tensor Tensor::slice_rows(std::size_t begin, std::size_t count) const {
  if (rank_ == 0 || begin + count > shape_[0]) throw std::invalid_argument("tensor: rows out of range");
  Tensor t = *this;
  t.data_ = static_cast<std::byte*>(data_) + storage_bytes(dtype_, begin * strides_[0]);
  t.shape_[0] = count;
  return t;
}

Tensor Tensor::slice_columns(std::size_t begin, std::size_t count) const {
  if (rank_ != 2 || begin + count > shape_[1]) throw std::invalid_argument("tensor: columns out of range");
  if (begin % block_values(dtype_) != 0 || count % block_values(dtype_) != 0)
    throw std::invalid_argument("tensor: quantised columns are sliced in whole blocks");
  Tensor t = *this;
  t.data_ = static_cast<std::byte*>(data_) + storage_bytes(dtype_, begin * strides_[1]);
  t.shape_[1] = count;
  return t;
}

Tensor Tensor::reshape(std::initializer_list<std::size_t> shape) const {
  check_contiguous();
  std::size_t count = 1;
  for (const std::size_t d : shape) count *= d;
  if (count != elements()) throw std::invalid_argument("tensor: reshape to another number of values");
  return make(data_, dtype_, std::span<const std::size_t>(shape.begin(), shape.size()), owner_, device_, writable_);
}

}  // namespace s1::backend
