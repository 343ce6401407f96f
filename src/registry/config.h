#pragma once
// Server configuration: defaults (docs/configuration.md), a JSON config file, then command-line
// flags. Anything invalid stops start-up with a ConfigError naming the bad entry.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/model_runner.h"

namespace s1::registry {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct UpstreamConfig {
  std::vector<std::string> urls;
  std::optional<std::string> model;  // the workers' name for it; the canonical id when absent
  std::optional<std::string> credential_env;   // environment variable holding the pool's key
  std::optional<std::string> credential_file;  // or a file holding it
  std::chrono::milliseconds connect_timeout{2'000};
  std::chrono::milliseconds health_interval{5'000};
  std::chrono::milliseconds health_timeout{2'000};
  size_t response_cap = 16 * 1024 * 1024;
  size_t max_in_flight = 256;
};

struct ModelConfig {
  std::string source;  // "mock:ramp", a checkpoint directory, or a known model name; empty for upstream
  std::optional<std::string> name;  // canonical id; derived from the source when absent
  std::vector<std::string> aliases;
  std::optional<std::string> release_date;  // "YYYY-MM-DD", shown in /v1/models
  std::optional<size_t> queue_capacity;  // the server-wide default when absent
  runtime::BatchLimits batch;  // "batch": {"max_requests", "max_tokens", "max_wait_us"}
  std::optional<size_t> prefix_cache_bytes;  // "prefix_cache"; RunnerOptions' default when absent
  std::optional<UpstreamConfig> upstream;  // set: served by a pool of upstream workers
};

// "NAME=URL[,URL...]" from --upstream.
ModelConfig parse_upstream_flag(const std::string& flag);
// The pool credential named by the config (environment variable or file), or "" when none.
std::string read_upstream_credential(const UpstreamConfig& upstream, const std::string& model);

struct ServerConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;
  std::vector<std::string> api_keys;
  size_t max_body_bytes = 4 * 1024 * 1024;
  std::chrono::milliseconds timeout{60'000};
  size_t max_questions = 400;  // OpenAI Decisions' limit; the token budget is the real bound
  // Images (contract §11.3): per request, encoded bytes per image, pixels per image (read from the
  // header before decoding). A model's contract may lower the first and the last.
  size_t max_images = 8;
  size_t max_image_bytes = 16 * 1024 * 1024;
  uint64_t max_image_pixels = 20'000'000;
  int64_t token_budget = 65'536;
  size_t queue_capacity = 32;
  int overload_status = 503;  // or 529, TypeSafe's overload status, for clients that key on it
  std::optional<std::string> default_model;
  // Extra names of the default model; TypeSafe's clients send "jev-latest" (contract §11.1).
  std::vector<std::string> default_model_aliases{"jev-latest"};
  std::string owned_by = "s1serve";
  std::chrono::milliseconds drain_timeout{30'000};
  int http_threads = 2;
  int prepare_threads = 2;  // parsing large bodies, rendering, tokenising: never on the I/O threads
  // A request's header must be whole this long after its first byte (a new connection's: after it
  // was accepted), else 408 (§11.6).
  std::chrono::milliseconds header_timeout{10'000};
  // Open connections beyond which no more are accepted until one closes.
  size_t max_connections = 4096;
  std::vector<ModelConfig> models;
};

// Reads a config file (JSON, strict: unknown members are errors) over `base`.
ServerConfig read_config_file(const std::filesystem::path& path, ServerConfig base);

// True for a real calendar date written YYYY-MM-DD.
bool is_iso_date(std::string_view text);

// One key per line; blank lines and lines starting with '#' are skipped.
std::vector<std::string> read_api_key_file(const std::filesystem::path& path);
// Comma-separated keys from an environment variable's value.
std::vector<std::string> parse_api_key_list(std::string_view value);

}  // namespace s1::registry
