#include "model/decoder/rope_config.h"

#include <optional>
#include <string>

namespace s1::decoder {

double read_default_rope_theta(checkpoint::ConfigReader& reader, std::optional<double> theta_default) {
  std::optional<double> theta = reader.optional<double>("rope_theta");
  for (const std::string_view key : {"rope_parameters", "rope_scaling"}) {
    std::optional<checkpoint::ConfigReader> rope = reader.optional_object(key);
    if (!rope) continue;
    for (const std::string_view type_key : {"rope_type", "type"}) {
      if (auto type = rope->optional<std::string>(type_key); type && *type != "default") {
        rope->reject(type_key, "is '" + *type + "'; only default RoPE (no scaling) is supported");
      }
    }
    if (auto nested = rope->optional<double>("rope_theta")) {
      if (theta && *theta != *nested) rope->reject("rope_theta", "disagrees with the top-level rope_theta");
      theta = nested;
    }
    rope->finish();
  }
  if (!theta) theta = theta_default;
  if (!theta) reader.reject("rope_theta", "is missing (neither top-level nor in rope_parameters)");
  if (!(*theta > 0.0)) reader.reject("rope_theta", "must be positive");
  return *theta;
}

}  // namespace s1::decoder
