#pragma once
// The repository root the GGUF tests read their fixtures from (ctest sets S1SERVE_SOURCE_DIR).

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace s1::checkpoint::testing {

inline std::filesystem::path source_dir() {
  const char* source = std::getenv("S1SERVE_SOURCE_DIR");
  if (source == nullptr) throw std::runtime_error("S1SERVE_SOURCE_DIR is not set");
  return source;
}

}  // namespace s1::checkpoint::testing
