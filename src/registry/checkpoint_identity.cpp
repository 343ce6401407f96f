#include "registry/checkpoint_identity.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <fstream>
#include <map>
#include <stdexcept>

#include "model/checkpoint/gguf.h"
#include "model/checkpoint/mapped_file.h"
#include "model/checkpoint/safetensors.h"

namespace s1::registry {
namespace {

bool is_weight_file(const std::filesystem::path& path) {
  const std::string extension = path.extension().string();
  return extension == ".safetensors" || extension == ".gguf";
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

bool is_commit_hash(std::string_view text) {
  return text.size() == 40 && std::all_of(text.begin(), text.end(), [](unsigned char c) {
           return std::isdigit(c) || (c >= 'a' && c <= 'f');
         });
}

// `huggingface-cli download` records the commit in two places: the cache's snapshots/<commit>/
// folder, and for --local-dir downloads the first line of .cache/huggingface/download/*.metadata.
std::optional<std::string> hugging_face_revision(const std::filesystem::path& dir) {
  const std::filesystem::path absolute = std::filesystem::absolute(dir).lexically_normal();
  std::filesystem::path previous;
  for (const auto& part : absolute) {
    if (previous == "snapshots" && is_commit_hash(part.string())) return part.string();
    previous = part;
  }
  std::error_code error;
  const std::filesystem::path records = dir / ".cache" / "huggingface" / "download";
  if (!std::filesystem::is_directory(records, error)) return std::nullopt;
  std::vector<std::filesystem::path> metadata;
  for (const auto& entry : std::filesystem::directory_iterator(records, error)) {
    if (entry.path().extension() == ".metadata") metadata.push_back(entry.path());
  }
  std::sort(metadata.begin(), metadata.end());
  for (const auto& path : metadata) {
    std::ifstream in(path);
    std::string first_line;
    if (std::getline(in, first_line) && is_commit_hash(first_line)) return first_line;
  }
  return std::nullopt;
}

void count_dtype_bytes(const std::filesystem::path& path, std::map<std::string, uint64_t>& bytes_by_dtype) {
  const checkpoint::MappedFile file = checkpoint::MappedFile::open(path);
  if (path.extension() == ".gguf") {
    const checkpoint::GgufFile gguf = checkpoint::parse_gguf(file.bytes(), path.string());
    for (const auto& tensor : gguf.tensors) {
      bytes_by_dtype[lowercase(checkpoint::ggml_type_info(tensor.type).name)] += tensor.bytes.size();
    }
    return;
  }
  const checkpoint::SafetensorsContents contents = checkpoint::parse_safetensors(file.bytes(), path.string());
  for (const auto& tensor : contents.tensors) {
    bytes_by_dtype[lowercase(checkpoint::dtype_name(tensor.dtype))] += tensor.bytes.size();
  }
}

std::string hex(std::span<const unsigned char> digest) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (const unsigned char byte : digest) {
    out += digits[byte >> 4];
    out += digits[byte & 15];
  }
  return out;
}

std::string sha256_of_text(std::string_view text) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  EVP_Digest(text.data(), text.size(), digest.data(), &length, EVP_sha256(), nullptr);
  return hex({digest.data(), length});
}

}  // namespace

std::optional<std::string> CheckpointIdentity::label() const {
  if (revision) return revision;
  if (files.empty()) return std::nullopt;
  std::string listing;
  for (const CheckpointFile& file : files) {
    if (!file.sha256) return std::nullopt;
    listing += *file.sha256 + "  " + file.name + "\n";
  }
  const std::string digest = files.size() == 1 ? *files.front().sha256 : sha256_of_text(listing);
  return digest.substr(0, 12);
}

CheckpointIdentity describe_checkpoint(const std::filesystem::path& location) {
  CheckpointIdentity identity;
  std::vector<std::filesystem::path> paths;
  std::filesystem::path dir = location;
  if (std::filesystem::is_regular_file(location)) {
    paths.push_back(location);
    dir = location.parent_path();
  } else {
    for (const auto& entry : std::filesystem::directory_iterator(location)) {
      if (entry.is_regular_file() && is_weight_file(entry.path())) paths.push_back(entry.path());
    }
  }
  std::sort(paths.begin(), paths.end());
  std::map<std::string, uint64_t> bytes_by_dtype;
  for (const auto& path : paths) {
    count_dtype_bytes(path, bytes_by_dtype);
    identity.files.push_back(CheckpointFile{path.lexically_relative(dir).string(),
                                            static_cast<uint64_t>(std::filesystem::file_size(path)), std::nullopt});
  }
  uint64_t most = 0;
  for (const auto& [dtype, bytes] : bytes_by_dtype) {
    if (bytes > most) {
      most = bytes;
      identity.dtype = dtype;
    }
  }
  identity.revision = hugging_face_revision(dir.empty() ? std::filesystem::path(".") : dir);
  return identity;
}

std::optional<std::string> sha256_of_file(const std::filesystem::path& path, std::stop_token stop) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot read " + path.string() + " to hash it");
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr);
  std::vector<unsigned char> buffer(1 << 20);
  for (;;) {
    if (stop.stop_requested()) {
      ::close(fd);
      return std::nullopt;
    }
    const ssize_t got = ::read(fd, buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      ::close(fd);
      throw std::runtime_error("cannot read " + path.string() + " to hash it");
    }
    if (got == 0) break;
    EVP_DigestUpdate(context.get(), buffer.data(), static_cast<size_t>(got));
  }
  ::close(fd);
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  EVP_DigestFinal_ex(context.get(), digest.data(), &length);
  return hex({digest.data(), length});
}

ServedCheckpoint::ServedCheckpoint(std::filesystem::path location, CheckpointIdentity identity)
    : location_(std::move(location)), identity_(std::move(identity)) {}

ServedCheckpoint::~ServedCheckpoint() = default;

void ServedCheckpoint::start_hashing() {
  if (hasher_.joinable()) return;
  hasher_ = std::jthread([this](std::stop_token stop) { hash_files(stop); });
}

void ServedCheckpoint::hash_files(std::stop_token stop) {
  // The hash must never slow the decisions the model serves meanwhile.
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), 19);
  const std::filesystem::path dir =
      std::filesystem::is_regular_file(location_) ? location_.parent_path() : location_;
  std::vector<std::string> names;
  {
    std::lock_guard lock(mutex_);
    for (const CheckpointFile& file : identity_.files) names.push_back(file.name);
  }
  for (size_t i = 0; i < names.size(); ++i) {
    std::optional<std::string> digest;
    try {
      digest = sha256_of_file(dir / names[i], stop);
    } catch (const std::runtime_error&) {
      return;  // the file went away after load: its identity stays unknown rather than wrong
    }
    if (!digest) return;
    std::lock_guard lock(mutex_);
    identity_.files[i].sha256 = std::move(digest);
  }
}

CheckpointIdentity ServedCheckpoint::snapshot() const {
  std::lock_guard lock(mutex_);
  return identity_;
}

}  // namespace s1::registry
