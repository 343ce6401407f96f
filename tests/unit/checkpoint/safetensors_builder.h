#pragma once

// Builds safetensors bytes in tests, valid or deliberately broken, so no binary fixtures are needed.

#include <bit>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <unistd.h>
#include <span>
#include <string>
#include <vector>

namespace s1::checkpoint::testing {

struct TensorSpec {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<std::byte> data;
};

template <typename T>
std::vector<std::byte> to_bytes(std::span<const T> values) {
  std::vector<std::byte> bytes(values.size_bytes());
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

inline std::vector<std::byte> f32_bytes(std::initializer_list<float> values) {
  return to_bytes(std::span<const float>(values.begin(), values.size()));
}

inline std::vector<std::byte> u16_bytes(std::initializer_list<uint16_t> values) {
  return to_bytes(std::span<const uint16_t>(values.begin(), values.size()));
}

// Header length prefix + header text + data, with nothing checked.
inline std::vector<std::byte> raw_file(std::string_view header, std::span<const std::byte> data) {
  std::vector<std::byte> file(8);
  uint64_t length = header.size();
  std::memcpy(file.data(), &length, 8);
  for (char c : header) file.push_back(static_cast<std::byte>(c));
  file.insert(file.end(), data.begin(), data.end());
  return file;
}

// A well-formed file: tensors laid out back to back in the given order; the header is padded with
// spaces to a multiple of 8 bytes (as the reference writer does) unless `pad` is false.
inline std::vector<std::byte> build_file(const std::vector<TensorSpec>& tensors,
                                         const std::map<std::string, std::string>& metadata = {},
                                         bool pad = true) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<std::byte> data;
  for (const auto& tensor : tensors) {
    header[tensor.name] = {{"dtype", tensor.dtype},
                           {"shape", tensor.shape},
                           {"data_offsets", {data.size(), data.size() + tensor.data.size()}}};
    data.insert(data.end(), tensor.data.begin(), tensor.data.end());
  }
  std::string text = header.dump();
  if (pad) {
    while (text.size() % 8 != 0) text.push_back(' ');
  }
  return raw_file(text, data);
}

inline void write_file(const std::filesystem::path& path, std::span<const std::byte> bytes) {
  std::ofstream stream(path, std::ios::binary | std::ios::trunc);
  stream.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline void write_text(const std::filesystem::path& path, std::string_view text) {
  std::ofstream stream(path, std::ios::binary | std::ios::trunc);
  stream << text;
}

// A fresh directory per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("s1_checkpoint_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(std::string_view name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace s1::checkpoint::testing
