#pragma once
// Shared helpers of the MiniLM parity tests: where the installed model and the committed fixtures
// live, and the fixture readers.

#include "decide/contracts/embedding_similarity.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace s1::parity {

using OrderedJson = nlohmann::ordered_json;

inline std::filesystem::path fixture_dir() {
  const char* source = std::getenv("S1SERVE_SOURCE_DIR");
  return std::filesystem::path(source != nullptr ? source : S1SERVE_SOURCE_DIR_FALLBACK) / "tests" / "parity" / "minilm";
}

// The model is a hard requirement: CI installs it (scripts/setup → scripts/fetch-default-model), so
// a missing model is a failure, never a skip.
inline std::filesystem::path model_dir_or_fail() {
  const std::filesystem::path dir = decide::default_model_directory();
  if (!std::filesystem::exists(dir / "model.safetensors") || !std::filesystem::exists(dir / "s1serve.json")) {
    ADD_FAILURE() << "all-MiniLM-L6-v2 is not installed in " << dir
                  << ": run scripts/fetch-default-model (or set S1SERVE_MODELS to the directory holding "
                     "all-minilm-l6-v2/)";
  }
  return dir;
}

inline std::vector<OrderedJson> read_jsonl(const std::filesystem::path& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::vector<OrderedJson> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) lines.push_back(OrderedJson::parse(line));
  }
  return lines;
}

inline std::vector<float> read_f32(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  const auto bytes = static_cast<size_t>(in.tellg());
  std::vector<float> values(bytes / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(float)));
  return values;
}

}  // namespace s1::parity
