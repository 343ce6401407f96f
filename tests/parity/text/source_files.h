#pragma once
// The source tree the text parity tests read their fixtures from (S1SERVE_SOURCE_DIR, which ctest
// sets) and whole-file reads of it.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace s1::text::test {

inline std::filesystem::path source_dir() {
  if (const char* dir = std::getenv("S1SERVE_SOURCE_DIR")) return dir;
  throw std::runtime_error("S1SERVE_SOURCE_DIR is not set");
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error("cannot open " + path.string());
  std::ostringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

}  // namespace s1::text::test
