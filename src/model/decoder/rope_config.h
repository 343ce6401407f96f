#pragma once
// The RoPE base of a decoder config.json, in either spelling: Transformers 5 writes
// "rope_parameters": {"rope_type": "default", "rope_theta": …}; older checkpoints write a top-level
// "rope_theta" and "rope_scaling": null. Only plain (default) RoPE is implemented: any scaling type
// is a LoadError rather than run unscaled.

#include <optional>

#include "model/checkpoint/config_reader.h"

namespace s1::decoder {

// Reads (and consumes) rope_theta, rope_parameters and rope_scaling; `theta_default` is used when
// neither spelling names a theta (nullopt: a missing theta is a LoadError).
double read_default_rope_theta(checkpoint::ConfigReader& reader, std::optional<double> theta_default = std::nullopt);

}  // namespace s1::decoder
