#pragma once
// Model name or alias → the served model (contract §2.2: exact, case-sensitive), in configuration
// order for /v1/models and /health.

#include "registry/checkpoint_identity.h"
#include "router/upstream_pool.h"
#include "runtime/model_runner.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace s1::registry {

// Exactly one of runner (a local engine) and pool (upstream workers) is set.
struct ServedModel {
  std::string name;
  std::vector<std::string> aliases;
  std::string release_date;  // "YYYY-MM-DD": configured, else the s1serve build's (contract §11.1)
  std::unique_ptr<runtime::ModelRunner> runner;
  std::unique_ptr<router::UpstreamPool> pool;
  // A local model's checkpoint identity for /v1/models' served_by; null for upstream and test models.
  std::unique_ptr<ServedCheckpoint> checkpoint;
};

// The s1serve build's release date, for models that configure none.
std::string_view build_release_date();
// The configured date when there is one, else the build's.
std::string release_date_or_build(const std::optional<std::string>& configured);

class ModelRegistry {
 public:
  // Throws ConfigError when the name or an alias is already taken.
  void add(ServedModel model);
  // Throws ConfigError when `name` is not served. Without a name, a registry serving exactly one
  // model makes it the default. Each of `aliases` not already taken becomes an alias of the default.
  void set_default_model(std::optional<std::string> name, const std::vector<std::string>& aliases = {});

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
