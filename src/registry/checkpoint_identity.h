#pragma once

#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace s1::registry {

// One weight file of a served checkpoint. `sha256` is what `sha256sum FILE` prints; it is filled in
// by a background hash after start-up, so an operator can tell which bytes a replica serves.
struct CheckpointFile {
  std::string name;  // relative to the checkpoint directory
  uint64_t bytes = 0;
  std::optional<std::string> sha256;
};

// What /v1/models' `served_by` says about a local model's checkpoint (contract §11.6).
struct CheckpointIdentity {
  std::optional<std::string> revision;  // the Hugging Face commit the files were downloaded at
  std::string dtype;                    // the storage dtype holding most of the weights' bytes
  std::vector<CheckpointFile> files;    // sorted by name

  // The revision, else the first 12 hex digits of the files' digest (one file: its SHA-256; several:
  // the SHA-256 of their `sha256sum` listing), nullopt while the hashes are being computed.
  std::optional<std::string> label() const;
};

// Reads only headers and Hugging Face download records: `location` is a checkpoint directory or a
// .gguf file. Throws std::runtime_error naming the file when a weight file cannot be read.
CheckpointIdentity describe_checkpoint(const std::filesystem::path& location);

// A checkpoint's identity whose file hashes are computed on a background thread at the lowest CPU
// priority (a 54 GB checkpoint takes a core for half a minute), readable from any thread meanwhile.
class ServedCheckpoint {
 public:
  ServedCheckpoint(std::filesystem::path location, CheckpointIdentity identity);
  ~ServedCheckpoint();
  ServedCheckpoint(const ServedCheckpoint&) = delete;
  ServedCheckpoint& operator=(const ServedCheckpoint&) = delete;

  void start_hashing();
  CheckpointIdentity snapshot() const;

 private:
  void hash_files(std::stop_token stop);

  const std::filesystem::path location_;
  mutable std::mutex mutex_;
  CheckpointIdentity identity_;
  std::jthread hasher_;
};

// The hex SHA-256 of a file's bytes, or nullopt when `stop` was requested first. Throws
// std::runtime_error naming the file when it cannot be read.
std::optional<std::string> sha256_of_file(const std::filesystem::path& path, std::stop_token stop = {});

}  // namespace s1::registry
