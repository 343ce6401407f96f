#pragma once

#include <cstddef>
#include <filesystem>
#include <span>

namespace s1::checkpoint {

// A whole file mapped read-only; unmapped on destruction. Moving keeps the mapping at the same
// address, so spans into bytes() stay valid across moves of the owner.
class MappedFile {
 public:
  // Throws LoadError naming the path if it cannot be opened, is not a regular file, or mmap fails.
  static MappedFile open(const std::filesystem::path& path);

  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  const std::filesystem::path& path() const { return path_; }

 private:
  MappedFile(std::filesystem::path path, const std::byte* data, std::size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}
  void unmap() noexcept;

  std::filesystem::path path_;
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace s1::checkpoint
