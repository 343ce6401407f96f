#include "model/checkpoint/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "model/checkpoint/load_error.h"

namespace s1::checkpoint {
namespace {

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what, int error) {
  throw LoadError(path.string() + ": " + what + ": " + std::strerror(error));
}

}  // namespace

MappedFile MappedFile::open(const std::filesystem::path& path) {
  const FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) fail(path, "cannot open", errno);
  struct stat status {};
  if (::fstat(fd.get(), &status) != 0) fail(path, "cannot stat", errno);
  if (!S_ISREG(status.st_mode)) throw LoadError(path.string() + ": not a regular file");
  const auto size = static_cast<std::size_t>(status.st_size);
  // mmap rejects a zero length; an empty file still gets a clean "too short" error from the parser.
  if (size == 0) return MappedFile(path, nullptr, 0);
  // MAP_PRIVATE + PROT_READ: nothing we do can write through to the checkpoint. The mapping stays
  // valid after the descriptor closes. (A file truncated by someone else while mapped would still
  // fault on access; checkpoints are expected to be immutable while served.)
  void* address = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (address == MAP_FAILED) fail(path, "cannot mmap", errno);
  return MappedFile(path, static_cast<const std::byte*>(address), size);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    unmap();
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() { unmap(); }

void MappedFile::unmap() noexcept {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace s1::checkpoint
