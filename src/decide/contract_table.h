#pragma once
// The one table from a model source to the contract that serves it.

#include "runtime/engine.h"

#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace s1::decide {

class ModelLoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct LoadedModel {
  std::string name;  // the canonical id the source implies
  std::vector<std::string> aliases;
  std::unique_ptr<runtime::Engine> engine;
};

// "mock:ramp" (test backends, served only when named), a checkpoint directory, a .gguf file, or a
// known model name. Throws ModelLoadError naming the source and the problem.
LoadedModel load_model(const std::string& source);

// Where load_model(source) reads its weights: the checkpoint directory or the .gguf file; nullopt
// for a test backend.
std::optional<std::filesystem::path> checkpoint_location(const std::string& source);

}  // namespace s1::decide
