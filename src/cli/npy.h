#pragma once
// NumPy .npy files (format version 1.0), for handing tensors to Python without another dependency.

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>

namespace s1::cli {

// The complete file bytes of a little-endian float32 C-order array of `shape`.
std::string npy_float32_bytes(std::span<const std::size_t> shape, std::span<const float> values);

// Writes npy_float32_bytes to `path`; throws std::runtime_error naming the path when it cannot.
void write_npy_float32(const std::filesystem::path& path, std::span<const std::size_t> shape,
                       std::span<const float> values);

}  // namespace s1::cli
