#pragma once
// Writes a GGUF v3 file (the format gguf.h reads): metadata in the order given, then the tensor
// directory and the tensors' bytes, each aligned to general.alignment (32 unless set).

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "model/checkpoint/gguf.h"

namespace s1::checkpoint {

struct GgufTensorData {
  std::string name;
  GgmlType type = GgmlType::kF32;
  std::vector<int64_t> shape;  // row-major, outermost first (as GgufTensor::shape())
  std::vector<std::byte> bytes;
};

// Throws LoadError naming the file when it cannot be written, std::invalid_argument for a tensor
// whose bytes do not hold its shape.
void write_gguf(const std::filesystem::path& file, std::span<const std::pair<std::string, GgufValue>> metadata,
                std::span<const GgufTensorData> tensors);

// Metadata values of the types the writers need.
GgufValue gguf_string(std::string value);
GgufValue gguf_uint32(uint32_t value);
GgufValue gguf_int32(int32_t value);
GgufValue gguf_float32(double value);
GgufValue gguf_bool(bool value);
GgufValue gguf_strings(std::vector<std::string> values);
GgufValue gguf_int32s(std::span<const int32_t> values);

}  // namespace s1::checkpoint
