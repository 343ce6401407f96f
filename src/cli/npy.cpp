#include "cli/npy.h"

#include <bit>
#include <cstring>
#include <fstream>
#include <functional>
#include <numeric>
#include <stdexcept>

namespace s1::cli {

std::string npy_float32_bytes(std::span<const std::size_t> shape, std::span<const float> values) {
  static_assert(std::endian::native == std::endian::little, "the header says little-endian");
  const std::size_t count = std::accumulate(shape.begin(), shape.end(), std::size_t{1}, std::multiplies<>());
  if (count != values.size()) throw std::invalid_argument("npy: shape does not match the number of values");
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < shape.size(); ++i) header += (i > 0 ? ", " : "") + std::to_string(shape[i]);
  header += shape.size() == 1 ? ",), }" : "), }";  // Python's tuple spelling: (3,) and (2, 3)
  // Magic (6) + version (2) + header length (2) + header, padded with spaces and ended by a newline
  // to a multiple of 64 bytes, as the format asks for aligned data.
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size() & 0xFF);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  const std::size_t data_offset = bytes.size();
  bytes.resize(data_offset + values.size_bytes());
  std::memcpy(bytes.data() + data_offset, values.data(), values.size_bytes());
  return bytes;
}

void write_npy_float32(const std::filesystem::path& path, std::span<const std::size_t> shape,
                       std::span<const float> values) {
  const std::string bytes = npy_float32_bytes(shape, values);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error(path.string() + ": cannot be written");
}

}  // namespace s1::cli
