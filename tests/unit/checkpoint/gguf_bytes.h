#pragma once
// GGUF bytes written field by field, for tests that need a file with exactly one thing wrong.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "model/checkpoint/gguf.h"

namespace s1::checkpoint::testing {

class GgufBytes {
 public:
  GgufBytes& u8(uint8_t value) { return raw(&value, 1); }
  GgufBytes& u32(uint32_t value) { return raw(&value, 4); }
  GgufBytes& u64(uint64_t value) { return raw(&value, 8); }
  GgufBytes& f32(float value) { return raw(&value, 4); }
  GgufBytes& str(std::string_view text) {
    u64(text.size());
    return raw(text.data(), text.size());
  }
  GgufBytes& header(uint64_t tensors, uint64_t keys, uint32_t version = 3) {
    raw("GGUF", 4);
    return u32(version).u64(tensors).u64(keys);
  }
  // A u32 metadata entry.
  GgufBytes& key_u32(std::string_view key, uint32_t value) {
    return str(key).u32(static_cast<uint32_t>(GgufType::kUint32)).u32(value);
  }
  GgufBytes& key_string(std::string_view key, std::string_view value) {
    return str(key).u32(static_cast<uint32_t>(GgufType::kString)).str(value);
  }
  // One tensor info entry.
  GgufBytes& tensor(std::string_view name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t dim : dims) u64(dim);
    return u32(type).u64(offset);
  }
  GgufBytes& pad_to(std::size_t alignment) {
    while (bytes_.size() % alignment != 0) bytes_.push_back(std::byte{0});
    return *this;
  }
  GgufBytes& zeros(std::size_t count) {
    bytes_.resize(bytes_.size() + count);
    return *this;
  }
  std::span<const std::byte> bytes() const { return bytes_; }

 private:
  GgufBytes& raw(const void* data, std::size_t size) {
    const auto* first = static_cast<const std::byte*>(data);
    bytes_.insert(bytes_.end(), first, first + size);
    return *this;
  }
  std::vector<std::byte> bytes_;
};

}  // namespace s1::checkpoint::testing
