#include "registry/model_registry.h"

#include "registry/config.h"

namespace s1::registry {

void ModelRegistry::add(ServedModel model) {
  auto entry = std::make_unique<ServedModel>(std::move(model));
  std::vector<std::string> names = entry->aliases;
  names.insert(names.begin(), entry->name);
  for (const std::string& name : names) {
    if (name.empty() || name.size() > 256) throw ConfigError("model name '" + name + "' must have 1-256 characters");
    if (!by_name_.emplace(name, entry.get()).second) {
      throw ConfigError("model name or alias '" + name + "' is used twice");
    }
  }
  models_.push_back(std::move(entry));
}

void ModelRegistry::set_default_model(std::optional<std::string> name) {
  if (name && resolve(*name) == nullptr) throw ConfigError("default model '" + *name + "' is not served");
  // The default is reported by canonical id even when configured by alias.
  default_model_ = name ? std::optional<std::string>(resolve(*name)->name) : std::nullopt;
}

const ServedModel* ModelRegistry::resolve(std::string_view name) const {
  const auto found = by_name_.find(name);
  return found == by_name_.end() ? nullptr : found->second;
}

void ModelRegistry::start_all() {
  for (const auto& model : models_) {
    if (model->runner) model->runner->start();
  }
}

void ModelRegistry::stop_all() {
  for (const auto& model : models_) {
    if (model->runner) model->runner->stop();
  }
}

}  // namespace s1::registry
