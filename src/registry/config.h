#pragma once
// Server configuration: defaults (docs/configuration.md), a JSON config file, then command-line
// flags. Anything invalid stops start-up with a ConfigError naming the bad entry.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace s1::registry {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ModelConfig {
  std::string source;  // "mock:ramp", a checkpoint directory, or a known model name
  std::optional<std::string> name;  // canonical id; derived from the source when absent
  std::vector<std::string> aliases;
  std::optional<size_t> queue_capacity;  // the server-wide default when absent
};

struct ServerConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;
  std::vector<std::string> api_keys;
  size_t max_body_bytes = 4 * 1024 * 1024;
  std::chrono::milliseconds timeout{60'000};
  size_t max_questions = 64;
  int64_t token_budget = 65'536;
  size_t queue_capacity = 32;
  std::optional<std::string> default_model;
  std::string owned_by = "s1serve";
  std::chrono::milliseconds drain_timeout{30'000};
  int http_threads = 2;
  std::vector<ModelConfig> models;
};

// Reads a config file (JSON, strict: unknown members are errors) over `base`.
ServerConfig read_config_file(const std::filesystem::path& path, ServerConfig base);

// One key per line; blank lines and lines starting with '#' are skipped.
std::vector<std::string> read_api_key_file(const std::filesystem::path& path);
// Comma-separated keys from an environment variable's value.
std::vector<std::string> parse_api_key_list(std::string_view value);

}  // namespace s1::registry
