#pragma once
// The request work of the decision routes once a body is whole: parse and validate it, choose what
// serves it (a worker pool or a local model), and run it locally through the model's runner.

#include "api/openai_decisions.h"
#include "registry/config.h"
#include "registry/model_registry.h"
#include "runtime/prepare_pool.h"
#include "server/batch_request.h"
#include "server/http_checks.h"
#include "server/metrics.h"
#include "server/reply.h"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string_view>
#include <variant>

namespace s1::server {

// What a readable socket of a request being served means; epoll also reports stale readiness, so a
// non-blocking peek confirms it.
enum class ClientState { quiet, sent_more, gone };
ClientState peek_client(boost::asio::ip::tcp::socket& socket);

class DecideHandler {
 public:
  using Clock = std::chrono::steady_clock;

  DecideHandler(const registry::ServerConfig& options, const registry::ModelRegistry& registry, Metrics& metrics);

  // What serves a request whose body is whole: a reply already (refused), or what to await.
  struct ForwardSystemOne {
    router::UpstreamPool* pool;
    bool renamed;  // the name the client used is not the one the pool's workers know
    std::string_view model;  // the served name, for the access log
  };
  struct ForwardDecisions {
    api::DecisionsRequest decisions;
    const registry::ServedModel* served;
  };
  struct RunLocally {
    std::shared_ptr<api::DecisionRequest> request;
    std::optional<api::DecisionsRequest> decisions;
    const registry::ServedModel* served;
    bool large;  // its body was large: its preparation is a large task of the prepare pool
  };
  using Decision = std::variant<Reply, ForwardSystemOne, ForwardDecisions, RunLocally>;
  // `uploads`: a multipart body's parts other than `request`, for the assets that name them.
  Decision decide(Route route, std::string_view body, std::vector<api::UploadedPart> uploads = {}) const;
  // Whether `body` is large enough to be parsed by decide_off_io rather than on the I/O thread.
  static bool decides_off_io(std::string_view body);
  // decide on the prepare pool, taking `uploads` (a reference: GCC 12 mishandles a by-value
  // argument of a co_awaited call); `body` must outlive the wait.
  boost::asio::awaitable<Decision> decide_off_io(Route route, std::string_view body,
                                                 std::vector<api::UploadedPart>& uploads);

  // Prepares the request on the prepare pool (rendering, tokenisation), queues it on its model and
  // waits for the outcome, its deadline, or the client on
  // `socket` going away (then the work is withdrawn).
  boost::asio::awaitable<Reply> run_locally(boost::asio::ip::tcp::socket& socket, Route route, RunLocally local,
                                            Clock::time_point deadline);

  // error_reply, with the configured overload status (503 or 529) when the error is `overloaded`:
  // a full model queue, prepare pool or upstream pool.
  Reply refusal(const api::ApiError& error, Route route) const;
  // The bounded pool for request work that must not run on the I/O threads (prepare_offload.h).
  runtime::PreparePool& prepare_pool() { return prepare_pool_; }

  // POST /v1/systemone/batch (§11.5): the body's items answered each as /v1/systemone would answer
  // it alone (run locally, or forwarded to its model's pool), run up to 16 at once so that a model's
  // batcher packs them together, the results in the items' order.
  boost::asio::awaitable<Reply> run_batch(boost::asio::ip::tcp::socket& socket, std::string_view body,
                                          std::string_view request_id, Clock::time_point deadline);

 private:
  // 400 unsupported_media when the request has images and the model takes none (§11.3).
  static std::optional<api::ApiError> refuse_media(const api::DecisionRequest& request,
                                                   const registry::ServedModel& served);
  // The server's limits lowered by the model's.
  api::MediaLimits media_limits(const runtime::ModelInfo& model) const;

  // One batch item's reply, as /v1/systemone would give it.
  boost::asio::awaitable<Reply> batch_item(boost::asio::ip::tcp::socket& socket, BatchItem& item,
                                           std::string_view request_id, Clock::time_point deadline);

  const registry::ServerConfig& options_;
  const registry::ModelRegistry& registry_;
  Metrics& metrics_;
  // Some model is an upstream pool: /v1/systemone bodies are scanned for `model` before any DOM.
  const bool serves_upstream_;
  // Last: destroyed first, so no task still runs when the rest goes.
  runtime::PreparePool prepare_pool_;
};

}  // namespace s1::server
