#pragma once
// The HTTP/1.1 front door: keep-alive sessions, the contract's check order (§4.4), per-request
// deadlines from header receipt, client-disconnect detection, and graceful drain on SIGTERM/SIGINT.

#include "registry/model_registry.h"
#include "server/metrics.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace s1::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;
  std::vector<std::string> api_keys;  // empty: the server is open
  size_t max_body_bytes = 4 * 1024 * 1024;
  std::chrono::milliseconds timeout{60'000};  // upload + queue + inference
  size_t max_questions = 64;
  int64_t token_budget = 65'536;
  std::chrono::milliseconds drain_timeout{30'000};
  int http_threads = 2;
  std::string owned_by = "s1serve";
};

class HttpServer {
 public:
  HttpServer(ServerOptions options, registry::ModelRegistry& registry, Metrics& metrics);
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
