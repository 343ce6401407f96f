#pragma once
// GET /health, GET /v1/models and GET /v1/models/{id} (contract §1.1, §1.2, §11.1, §11.6).

#include <cstdint>
#include <optional>
#include <string>

#include "registry/config.h"
#include "registry/model_registry.h"

namespace s1::server {

struct StatusReply {
  int status = 200;
  std::string body;
};

// What a model listing says besides the registry: the OpenAI `created` time and the server's limits.
struct ModelListing {
  int64_t created = 0;
  const registry::ServerConfig& config;
};

StatusReply health_reply(const registry::ModelRegistry& registry);
std::string models_body(const registry::ModelRegistry& registry, const ModelListing& listing);
// The OpenAI model object for a canonical id or alias; nullopt when nothing is served by that name.
std::optional<std::string> model_body(const registry::ModelRegistry& registry, std::string_view id,
                                      const ModelListing& listing);

}  // namespace s1::server
