#include "model/checkpoint/gguf_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "model/checkpoint/load_error.h"
#include "model/checkpoint/tensor.h"

namespace s1::checkpoint {
namespace {

class Bytes {
 public:
  template <class T>
  void put(T value) {
    append(&value, sizeof(T));
  }
  void put_string(const std::string& text) {
    put<uint64_t>(text.size());
    append(text.data(), text.size());
  }
  void put_value(const GgufValue& value) {
    switch (value.type) {
      case GgufType::kUint8:
        return put(static_cast<uint8_t>(std::get<uint64_t>(value.value)));
      case GgufType::kUint16:
        return put(static_cast<uint16_t>(std::get<uint64_t>(value.value)));
      case GgufType::kUint32:
        return put(static_cast<uint32_t>(std::get<uint64_t>(value.value)));
      case GgufType::kUint64:
        return put(std::get<uint64_t>(value.value));
      case GgufType::kInt8:
        return put(static_cast<int8_t>(std::get<int64_t>(value.value)));
      case GgufType::kInt16:
        return put(static_cast<int16_t>(std::get<int64_t>(value.value)));
      case GgufType::kInt32:
        return put(static_cast<int32_t>(std::get<int64_t>(value.value)));
      case GgufType::kInt64:
        return put(std::get<int64_t>(value.value));
      case GgufType::kFloat32:
        return put(static_cast<float>(std::get<double>(value.value)));
      case GgufType::kFloat64:
        return put(std::get<double>(value.value));
      case GgufType::kBool:
        return put(static_cast<uint8_t>(std::get<bool>(value.value) ? 1 : 0));
      case GgufType::kString:
        return put_string(std::get<std::string>(value.value));
      case GgufType::kArray: {
        const GgufArray& array = std::get<GgufArray>(value.value);
        put(static_cast<uint32_t>(array.element_type));
        put<uint64_t>(array.items.size());
        for (const GgufValue& item : array.items) put_value(item);
        return;
      }
    }
  }
  void pad(std::size_t alignment) {
    while (data_.size() % alignment != 0) data_.push_back(std::byte{0});
  }
  [[nodiscard]] const std::vector<std::byte>& data() const { return data_; }

 private:
  // resize and memcpy, not insert: GCC 12 reports a false overflow for small inserts (-Wstringop-overflow).
  void append(const void* bytes, std::size_t count) {
    const std::size_t at = data_.size();
    data_.resize(at + count);
    if (count != 0) std::memcpy(data_.data() + at, bytes, count);
  }
  std::vector<std::byte> data_;
};

}  // namespace

GgufValue gguf_string(std::string value) { return {GgufType::kString, std::move(value)}; }
GgufValue gguf_uint32(uint32_t value) { return {GgufType::kUint32, uint64_t{value}}; }
GgufValue gguf_int32(int32_t value) { return {GgufType::kInt32, int64_t{value}}; }
GgufValue gguf_float32(double value) { return {GgufType::kFloat32, value}; }
GgufValue gguf_bool(bool value) { return {GgufType::kBool, value}; }

GgufValue gguf_strings(std::vector<std::string> values) {
  GgufArray array{.element_type = GgufType::kString, .items = {}};
  array.items.reserve(values.size());
  for (std::string& value : values) array.items.push_back(gguf_string(std::move(value)));
  return {GgufType::kArray, std::move(array)};
}

GgufValue gguf_int32s(std::span<const int32_t> values) {
  GgufArray array{.element_type = GgufType::kInt32, .items = {}};
  array.items.reserve(values.size());
  for (const int32_t value : values) array.items.push_back(gguf_int32(value));
  return {GgufType::kArray, std::move(array)};
}

void write_gguf(const std::filesystem::path& file, std::span<const std::pair<std::string, GgufValue>> metadata,
                std::span<const GgufTensorData> tensors) {
  std::size_t alignment = kGgufDefaultAlignment;
  Bytes header;
  header.put<uint32_t>(0x46554747);  // "GGUF"
  header.put<uint32_t>(3);
  header.put<uint64_t>(tensors.size());
  header.put<uint64_t>(metadata.size());
  for (const auto& [key, value] : metadata) {
    if (key == "general.alignment") alignment = std::get<uint64_t>(value.value);
    header.put_string(key);
    header.put(static_cast<uint32_t>(value.type));
    header.put_value(value);
  }
  uint64_t offset = 0;
  for (const GgufTensorData& tensor : tensors) {
    int64_t count = 1;
    for (const int64_t dim : tensor.shape) count *= dim;
    const GgmlTypeInfo& info = ggml_type_info(tensor.type);
    if (tensor.shape.empty() || tensor.shape.back() % info.block_elements != 0 ||
        tensor.bytes.size() != static_cast<std::size_t>(count / info.block_elements) * info.block_bytes)
      throw std::invalid_argument("write_gguf: tensor '" + tensor.name + "' of " + shape_to_string(tensor.shape) + " " +
                                  std::string(info.name) + " values has " + std::to_string(tensor.bytes.size()) +
                                  " bytes");
    header.put_string(tensor.name);
    header.put<uint32_t>(static_cast<uint32_t>(tensor.shape.size()));
    // ggml's ne[]: innermost first.
    for (auto dim = tensor.shape.rbegin(); dim != tensor.shape.rend(); ++dim) header.put<uint64_t>(*dim);
    header.put(static_cast<uint32_t>(tensor.type));
    header.put(offset);
    offset += (tensor.bytes.size() + alignment - 1) / alignment * alignment;
  }
  header.pad(alignment);
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  const auto write = [&](const std::vector<std::byte>& bytes) {
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  };
  write(header.data());
  static const std::vector<std::byte> zeros(kGgufDefaultAlignment * 8);
  for (const GgufTensorData& tensor : tensors) {
    write(tensor.bytes);
    const std::size_t padding = (alignment - tensor.bytes.size() % alignment) % alignment;
    for (std::size_t left = padding; left > 0;) {
      const std::size_t step = std::min(left, zeros.size());
      out.write(reinterpret_cast<const char*>(zeros.data()), static_cast<std::streamsize>(step));
      left -= step;
    }
  }
  out.close();
  if (!out) throw LoadError(file.string() + ": cannot be written (" + std::strerror(errno) + ")");
}

}  // namespace s1::checkpoint
