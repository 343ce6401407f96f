#pragma once

#include <stdexcept>
#include <string>

namespace s1::checkpoint {

// Anything wrong with a checkpoint or its config on disk. The message names the file and, where
// relevant, the tensor or key, because it is what an operator sees when start-up stops.
class LoadError : public std::runtime_error {
 public:
  explicit LoadError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace s1::checkpoint
