#pragma once

#include <cstddef>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/checkpoint/tensor.h"

namespace s1::checkpoint {

// Headers above this are rejected before parsing (the limit the reference Rust reader uses), so a
// hostile length cannot make us allocate or parse gigabytes.
inline constexpr std::size_t kMaxSafetensorsHeaderBytes = 100'000'000;

struct SafetensorsContents {
  std::map<std::string, std::string> metadata;  // the optional "__metadata__" entry
  std::vector<TensorView> tensors;               // ordered by data offset
};

// Parses and fully validates one safetensors file held in memory (normally an mmap of it); the
// views point into `file_bytes`. `file_label` names the file in LoadError messages. This is the
// whole trust boundary for checkpoint bytes, and the fuzz target's entry point.
SafetensorsContents parse_safetensors(std::span<const std::byte> file_bytes,
                                      std::string_view file_label);

}  // namespace s1::checkpoint
