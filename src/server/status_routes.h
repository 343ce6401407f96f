#pragma once
// GET /health and GET /v1/models (contract §1.1, §1.2).

#include "registry/model_registry.h"

#include <cstdint>
#include <string>

namespace s1::server {

struct StatusReply {
  int status = 200;
  std::string body;
};

StatusReply health_reply(const registry::ModelRegistry& registry);
std::string models_body(const registry::ModelRegistry& registry, int64_t created, const std::string& owned_by);

}  // namespace s1::server
