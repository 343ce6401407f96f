#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "model/checkpoint/gguf.h"
#include "model/checkpoint/mapped_file.h"
#include "model/checkpoint/tensor.h"

namespace s1::checkpoint {

inline constexpr std::string_view kSingleFileName = "model.safetensors";
inline constexpr std::string_view kShardIndexName = "model.safetensors.index.json";

// The tensors of one model, mapped from one safetensors file, the shards of a sharded index, or
// one GGUF file. Every view points into a mapping this object owns; nothing is copied at open,
// except GGUF tensors whose values loading must change (gguf_weights.h).
class Checkpoint {
 public:
  // A directory: its model.safetensors if present (what Transformers prefers), otherwise its
  // model.safetensors.index.json. A file: that safetensors file, or a GGUF file (told by its
  // magic), its tensors under our names (gguf_weights.h). Throws LoadError on any problem.
  static Checkpoint open(const std::filesystem::path& dir_or_file);

  const TensorView* find(std::string_view name) const;
  // Throw LoadError naming the checkpoint and the tensor (and both shapes, for the second).
  const TensorView& get(std::string_view name) const;
  const TensorView& get(std::string_view name, std::span<const int64_t> expected_shape) const;
  const TensorView& get(std::string_view name, std::initializer_list<int64_t> expected_shape) const;

  // Gives the pages of a mapped tensor's bytes back to the kernel once its values live elsewhere (a
  // packed weight), so that a loader's resident memory does not keep the file it has read; a later
  // read of the view maps them in again. Bytes outside the mappings (GGUF values changed at load)
  // are left alone.
  void release_pages(const TensorView& tensor) const;
  // to_float, then release_pages: for a loader that keeps only the fp32 copy.
  std::vector<float> to_float_released(const TensorView& tensor) const;

  // Sorted by name.
  std::span<const TensorView> tensors() const { return tensors_; }
  std::vector<std::string_view> names() const;
  const std::filesystem::path& source() const { return source_; }
  // The GGUF file's metadata and tensor directory; nullptr for safetensors.
  const GgufFile* gguf() const { return gguf_.get(); }

 private:
  Checkpoint(std::filesystem::path source, std::vector<MappedFile> files,
             std::vector<TensorView> tensors);
  static Checkpoint open_file(const std::filesystem::path& file);
  static Checkpoint open_index(const std::filesystem::path& index_file);
  static Checkpoint open_gguf(const std::filesystem::path& file, MappedFile mapped);

  std::filesystem::path source_;
  std::vector<MappedFile> files_;
  std::vector<TensorView> tensors_;
  std::vector<std::vector<float>> owned_;  // GGUF tensors whose values were changed at load
  std::shared_ptr<const GgufFile> gguf_;
};

}  // namespace s1::checkpoint
