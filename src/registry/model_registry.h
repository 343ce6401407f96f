#pragma once
// Model name or alias → the served model (contract §2.2: exact, case-sensitive), in configuration
// order for /v1/models and /health.

#include "router/upstream_pool.h"
#include "runtime/model_runner.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace s1::registry {

// Exactly one of runner (a local engine) and pool (upstream workers) is set.
struct ServedModel {
  std::string name;
  std::vector<std::string> aliases;
  std::unique_ptr<runtime::ModelRunner> runner;
  std::unique_ptr<router::UpstreamPool> pool;
};

class ModelRegistry {
 public:
  // Throws ConfigError when the name or an alias is already taken.
  void add(ServedModel model);
  // Throws ConfigError when `name` is not served.
  void set_default_model(std::optional<std::string> name);

  const ServedModel* resolve(std::string_view name) const;
  const std::optional<std::string>& default_model() const { return default_model_; }
  const std::vector<std::unique_ptr<ServedModel>>& models() const { return models_; }

  void start_all();
  void stop_all();

 private:
  std::vector<std::unique_ptr<ServedModel>> models_;
  std::map<std::string, ServedModel*, std::less<>> by_name_;
  std::optional<std::string> default_model_;
};

}  // namespace s1::registry
