#include "registry/model_registry.h"

#include "registry/config.h"

namespace s1::registry {

std::string_view build_release_date() { return S1SERVE_RELEASE_DATE; }

std::string release_date_or_build(const std::optional<std::string>& configured) {
  return configured ? *configured : std::string(build_release_date());
}

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

void ModelRegistry::set_default_model(std::optional<std::string> name, const std::vector<std::string>& aliases) {
  if (name && resolve(*name) == nullptr) throw ConfigError("default model '" + *name + "' is not served");
  // `serve --model DIR` alone must answer requests that name no model (contract §11.1).
  if (!name && models_.size() == 1) name = models_.front()->name;
  if (!name) {
    default_model_.reset();
    return;
  }
  // The default is reported by canonical id even when configured by alias.
  ServedModel* model = by_name_.find(*name)->second;
  default_model_ = model->name;
  // Clients send TypeSafe's "jev-latest"; a served model of that name keeps it.
  for (const std::string& alias : aliases) {
    if (by_name_.emplace(alias, model).second) model->aliases.push_back(alias);
  }
}

const ServedModel* ModelRegistry::resolve(std::string_view name) const {
  const auto found = by_name_.find(name);
  return found == by_name_.end() ? nullptr : found->second;
}

void ModelRegistry::start_all() {
  for (const auto& model : models_) {
    if (model->runner) model->runner->start();
    if (model->checkpoint) model->checkpoint->start_hashing();
  }
}

void ModelRegistry::stop_all() {
  for (const auto& model : models_) {
    if (model->runner) model->runner->stop();
  }
}

}  // namespace s1::registry
