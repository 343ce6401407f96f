#pragma once
// Definitions of the field readers declared in components.h; include only from .cpp files.

#include <nlohmann/json.hpp>

#include "text/components.h"

namespace s1::text::detail {

template <typename T>
T required_field(const nlohmann::json& section, std::string_view component, const char* field) {
  const auto found = section.find(field);
  if (found == section.end()) {
    throw ConfigError(std::string(component) + ": missing field '" + field + "'");
  }
  try {
    return found->template get<T>();
  } catch (const nlohmann::json::exception&) {
    throw ConfigError(std::string(component) + ": field '" + field + "' has the wrong type (" +
                      std::string(found->type_name()) + ")");
  }
}

// Optional field: the default when absent or null.
template <typename T>
T optional_field(const nlohmann::json& section, std::string_view component, const char* field, T fallback) {
  const auto found = section.find(field);
  if (found == section.end() || found->is_null()) return fallback;
  return required_field<T>(section, component, field);
}

// The section's "type" string, for choosing an implementation.
inline std::string component_type(const nlohmann::json& section, std::string_view component) {
  if (!section.is_object()) throw ConfigError(std::string(component) + " must be an object or null");
  return required_field<std::string>(section, component, "type");
}

inline ConfigError unsupported(std::string_view component, std::string_view type) {
  return ConfigError(std::string(component) + " type '" + std::string(type) + "' is not supported");
}

}  // namespace s1::text::detail
