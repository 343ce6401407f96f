#pragma once
// The HTTP/1.1 front door: keep-alive sessions, the contract's check order (§4.4), per-request
// deadlines from header receipt, client-disconnect detection, and graceful drain on SIGTERM/SIGINT.

#include "registry/config.h"
#include "registry/model_registry.h"
#include "server/metrics.h"

#include <cstdint>
#include <memory>

namespace s1::server {

class HttpServer {
 public:
  // Serves with the server settings of `config` (its models are already in `registry`).
  HttpServer(registry::ServerConfig config, registry::ModelRegistry& registry, Metrics& metrics);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens; returns the bound port (useful with port 0). Throws on failure.
  uint16_t listen();
  // Serves until SIGTERM or SIGINT, then stops accepting, lets in-flight requests finish within the
  // drain budget, and returns.
  void run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace s1::server
