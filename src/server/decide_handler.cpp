#include "server/decide_handler.h"
#include "server/prepare_offload.h"

#include "api/openai_decisions.h"
#include "api/request.h"
#include "api/response.h"

#include <boost/asio/async_result.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <functional>

#include <sys/socket.h>

namespace s1::server {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

using error_code = boost::system::error_code;

// As printf's "%.3f" (to_chars is specified as printf in the C locale), without its format parsing.
std::string format_milliseconds(double seconds) {
  char text[64];
  const auto written = std::to_chars(text, text + sizeof text, seconds * 1000.0, std::chars_format::fixed, 3);
  return std::string(text, written.ptr);
}

// Items of one /v1/systemone/batch request in flight at once, at most: a default batch's worth.
constexpr size_t bulk_items_in_flight = 16;

// Where an inference outcome meets the request waiting for it, on the connection's thread.
struct Waiter {
  explicit Waiter(asio::any_io_executor executor) : signal(std::move(executor)) {}
  asio::steady_timer signal;
  std::optional<runtime::JobOutcome> outcome;
  bool readable = false;
};


// Bodies from this size on are parsed off the I/O thread (a strict parse and validation take tens of
// milliseconds per MiB, the hop to the pool tens of microseconds), and their work, like that of
// states from this size on, is a large task of the pool.
constexpr size_t large_body_bytes = 64 * 1024;
// Tasks waiting for a prepare thread before the next is refused with 503: enough for a burst of
// every connection at once, few enough that a flood of 4 MiB bodies cannot queue without bound.
constexpr size_t prepare_tasks_waiting = 256;

// A multipart body reaches a worker as its JSON part alone, which would lose the images.
api::ApiError forwarded_uploads_refused() {
  return api::ApiError::make(api::ErrorCode::unsupported_media,
                             "Multipart image uploads cannot be forwarded to this model's workers; send the assets "
                             "inline as data_base64");
}

}  // namespace

ClientState peek_client(tcp::socket& socket) {
  char byte = 0;
  const ssize_t received = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (received > 0) return ClientState::sent_more;
  if (received < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return ClientState::quiet;
  return ClientState::gone;
}

DecideHandler::DecideHandler(const registry::ServerConfig& options, const registry::ModelRegistry& registry,
                             Metrics& metrics)
    : options_(options),
      registry_(registry),
      metrics_(metrics),
      serves_upstream_(std::any_of(registry.models().begin(), registry.models().end(),
                                   [](const auto& served) { return served->pool != nullptr; })),
      prepare_pool_(static_cast<size_t>(options.prepare_threads), prepare_tasks_waiting) {}

Reply DecideHandler::refusal(const api::ApiError& error, Route route) const {
  Reply refused = error_reply(error, route);
  if (error.code == api::ErrorCode::overloaded) refused.status = options_.overload_status;
  return refused;
}

bool DecideHandler::decides_off_io(std::string_view body) { return body.size() >= large_body_bytes; }

asio::awaitable<DecideHandler::Decision> DecideHandler::decide_off_io(Route route, std::string_view body,
                                                                    std::vector<api::UploadedPart>& uploads) {
  // Named, not a temporary in the co_await expression (see on_pool).
  std::function<Decision()> work = [this, route, body, &uploads] { return decide(route, body, std::move(uploads)); };
  std::optional<Decision> decision =
      co_await on_pool<Decision>(prepare_pool_, runtime::PreparePool::Size::large, std::move(work));
  if (!decision) {
    co_return refusal(preparing_overloaded(), route);
  }
  co_return std::move(*decision);
}

std::optional<api::ApiError> DecideHandler::refuse_media(const api::DecisionRequest& request,
                                                         const registry::ServedModel& served) {
  if (request.media.empty() || served.pool) return std::nullopt;
  if (served.runner->info().max_images == 0) {
    api::ApiError error = api::ApiError::make(
        api::ErrorCode::unsupported_media, "Model " + served.name + " takes no images; send text only or choose a vision model");
    error.openai_param = request.media.front().label;  // /v1/decisions labels are its params
    return error;
  }
  return std::nullopt;
}

api::MediaLimits DecideHandler::media_limits(const runtime::ModelInfo& model) const {
  api::MediaLimits limits{options_.max_images, options_.max_image_bytes, options_.max_image_pixels};
  limits.max_images = std::min(limits.max_images, model.max_images);
  if (model.max_image_pixels > 0) limits.max_image_pixels = std::min(limits.max_image_pixels, model.max_image_pixels);
  return limits;
}

DecideHandler::Decision DecideHandler::decide(Route route, std::string_view body,
                                              std::vector<api::UploadedPart> uploads) const {
  // The router checks only `model` before forwarding (§7.1): a scan applies the strict-JSON rules
  // without building the document, which only a locally served request needs.
  if (route == Route::systemone && serves_upstream_) {
    const auto scanned = api::scan_strict_json(body, "model");
    if (const auto* error = std::get_if<api::JsonSyntaxError>(&scanned)) {
      return error_reply(api::ApiError::validation({api::validation::json_invalid(error->message)}), route);
    }
    const api::StrictJsonScan& scan = std::get<api::StrictJsonScan>(scanned);
    if (scan.object) {
      const api::TopLevelMember& model = scan.member;
      std::optional<std::string_view> name_used;
      if (model.kind == api::TopLevelMember::Kind::absent || model.kind == api::TopLevelMember::Kind::null) {
        name_used = registry_.default_model();
      } else if (model.kind == api::TopLevelMember::Kind::string && !model.text.empty() &&
                 api::count_code_points(model.text) <= api::max_name_characters &&
                 !api::has_control_character(model.text)) {
        name_used = model.text;
      }
      const registry::ServedModel* served = name_used ? registry_.resolve(*name_used) : nullptr;
      if (served != nullptr && served->pool && !uploads.empty()) {
        return error_reply(forwarded_uploads_refused(), route);
      }
      if (served != nullptr && served->pool) {
        return ForwardSystemOne{served->pool.get(), *name_used != served->pool->upstream_model(), served->name};
      }
    }
  }

  const api::RequestLimits limits{options_.max_questions, registry_.default_model().has_value()};
  using api::validation::parse_then_validate;
  std::shared_ptr<api::DecisionRequest> request;
  std::optional<api::DecisionsRequest> decisions;
  if (route == Route::decisions) {
    auto validated = parse_then_validate(body, limits, &api::validate_decisions_request);
    if (!validated) return error_reply(validated.error(), route);
    decisions = std::move(validated.value());
    request = std::make_shared<api::DecisionRequest>(decisions->pipeline);
    decisions->pipeline.media.clear();  // one copy of the encoded images is enough
  } else {
    auto validated = parse_then_validate(body, limits, &api::validate_system_one_request);
    if (!validated) return error_reply(validated.error(), route);
    request = std::make_shared<api::DecisionRequest>(std::move(validated.value()));
    const bool multipart = !uploads.empty();
    auto attached = api::attach_uploads(std::move(request->media), std::move(uploads));
    if (!attached) return error_reply(attached.error(), route);
    request->media = std::move(attached.value());
    if (multipart && serves_upstream_) {
      const std::string target = request->model.value_or(registry_.default_model().value_or(""));
      if (const registry::ServedModel* served = registry_.resolve(target); served != nullptr && served->pool) {
        return error_reply(forwarded_uploads_refused(), route);
      }
    }
  }

  const std::string name = request->model.value_or(registry_.default_model().value_or(""));
  const registry::ServedModel* served = registry_.resolve(name);
  if (served == nullptr) {
    api::ApiError error = api::ApiError::make(api::ErrorCode::unknown_model, "Unknown model: " + name);
    error.openai_param = "model";
    return error_reply(error, route);
  }
  if (served->pool && decisions && !request->media.empty()) {
    // The worker's System One body (§7.3) has no place for them: refused, never dropped.
    return error_reply(api::ApiError::make(api::ErrorCode::unsupported_media,
                                           "Images in /v1/decisions cannot be forwarded to this model's workers"),
                       route);
  }
  if (served->pool && decisions) return ForwardDecisions{std::move(*decisions), served};
  if (served->pool) {
    return ForwardSystemOne{served->pool.get(), served->name != served->pool->upstream_model(), served->name};
  }
  if (auto refused = refuse_media(*request, *served)) return error_reply(*refused, route);
  // Decoding images is a large task whatever the body's size.
  const bool large = decides_off_io(body) || !request->media.empty();
  return RunLocally{std::move(request), std::move(decisions), served, large};
}

asio::awaitable<Reply> DecideHandler::run_locally(tcp::socket& socket, Route route, RunLocally local,
                                                  Clock::time_point deadline) {
  const std::shared_ptr<api::DecisionRequest> request = std::move(local.request);
  const std::optional<api::DecisionsRequest> decisions = std::move(local.decisions);
  const registry::ServedModel* served = local.served;
  runtime::ModelRunner& runner = *served->runner;
  if (runner.state() != runtime::ModelState::ready) {
    co_return error_reply(api::ApiError::model_unavailable(served->name, runner.state() == runtime::ModelState::failed),
                          route);
  }
  using Prepared = api::Result<std::unique_ptr<runtime::Plan>>;
  const runtime::Engine& engine = runner.engine();
  const runtime::PrepareLimits limits{options_.token_budget};
  const api::MediaLimits media = media_limits(runner.info());
  // Decoding is prepare work: off the I/O thread, before the contract sees the request.
  std::function<Prepared()> work = [&engine, request, limits, media]() -> Prepared {
    if (!request->media.empty()) {
      auto images = api::decode_request_images(request->media, media);
      if (!images) return images.error();
      request->images = std::move(images.value());
      request->media.clear();  // the encoded bytes are not needed again
    }
    return engine.prepare(*request, limits);
  };
  const auto size = local.large ? runtime::PreparePool::Size::large : runtime::PreparePool::Size::small;
  std::optional<Prepared> prepared = co_await on_pool<Prepared>(prepare_pool_, size, std::move(work));
  if (!prepared) {
    co_return refusal(preparing_overloaded(), route);
  }
  Prepared& plan = *prepared;
  if (!plan) co_return error_reply(plan.error(), route);
  const int64_t input_tokens = (*plan)->input_tokens;

  const asio::any_io_executor executor = co_await asio::this_coro::executor;
  auto waiter = std::make_shared<Waiter>(executor);
  auto job = runner.submit(request, std::move(plan.value()), deadline, [waiter, executor](runtime::JobOutcome outcome) {
    asio::post(executor, [waiter, outcome = std::move(outcome)]() mutable {
      waiter->outcome = std::move(outcome);
      waiter->signal.cancel();
    });
  });
  if (!job) co_return refusal(job.error(), route);
  metrics_.set_gauge("s1serve_queue_depth", {{"model", served->name}}, static_cast<double>(runner.queue_depth()));

  // While the request waits, a readable socket may mean the client closed it; epoll also reports
  // stale readiness, so the state is confirmed with a non-blocking peek before acting on it.
  auto watch_client = [&socket, waiter] {
    socket.async_wait(tcp::socket::wait_read, [waiter](const error_code& error) {
      if (error) return;
      waiter->readable = true;
      waiter->signal.cancel();
    });
  };
  watch_client();
  bool owner_gave_up = false;
  while (!waiter->outcome) {
    waiter->signal.expires_at(owner_gave_up ? Clock::time_point::max() : deadline);
    error_code ignored;
    co_await waiter->signal.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    if (waiter->outcome) break;
    if (waiter->readable) {
      waiter->readable = false;
      switch (peek_client(socket)) {
        case ClientState::quiet: watch_client(); continue;
        case ClientState::sent_more: continue;  // pipelined: its next request waits in the socket
        case ClientState::gone: break;
      }
      if (job.value()->claim()) {
        runner.withdraw(job.value());
        Reply gone;
        gone.send = false;
        gone.status = 499;  // nginx's "client closed request", for metrics only
        co_return gone;
      }
      owner_gave_up = true;  // the executor already claimed it; its outcome is on the way
      continue;
    }
    if (Clock::now() >= deadline) {
      if (job.value()->claim()) {
        runner.withdraw(job.value());
        error_code ignored_cancel;
        socket.cancel(ignored_cancel);
        co_return error_reply(api::ApiError::make(api::ErrorCode::deadline_exceeded, "The request's deadline passed"),
                              route);
      }
      owner_gave_up = true;
    }
  }
  error_code ignored_cancel;
  socket.cancel(ignored_cancel);

  runtime::JobOutcome& outcome = *waiter->outcome;
  metrics_.observe("s1serve_queue_wait_seconds", {{"model", served->name}}, outcome.queue_seconds);
  metrics_.observe("s1serve_inference_seconds", {{"model", served->name}}, outcome.inference_seconds);
  if (!outcome.answers) co_return error_reply(outcome.answers.error(), route);

  api::DecisionResult result;
  result.model = served->name;
  result.answers = std::move(outcome.answers.value());
  result.input_tokens = input_tokens;
  result.cached_tokens = outcome.cached_tokens;
  metrics_.add_counter("s1serve_input_tokens_total", {{"model", served->name}}, static_cast<double>(input_tokens));
  if (!request->images.empty()) {
    metrics_.add_counter("s1serve_images_total", {{"model", served->name}}, static_cast<double>(request->images.size()));
  }
  for (const api::Question& question : request->questions) {
    metrics_.add_counter("s1serve_questions_total",
                        {{"model", served->name}, {"type", std::string(api::question_type_name(question.type))}});
  }

  Reply reply;
  reply.body = route == Route::decisions ? api::serialize_decisions_response(*decisions, result)
                                         : api::serialize_system_one_response(*request, result);
  reply.headers.add("Server-Timing", "queue;dur=" + format_milliseconds(outcome.queue_seconds) +
                                         ", infer;dur=" + format_milliseconds(outcome.inference_seconds));
  co_return reply;
}

asio::awaitable<Reply> DecideHandler::run_batch(tcp::socket& socket, std::string_view body,
                                                std::string_view request_id, Clock::time_point deadline) {
  using Parsed = api::Result<std::vector<BatchItem>>;
  const api::RequestLimits limits{options_.max_questions, registry_.default_model().has_value()};
  std::optional<Parsed> parsed;
  if (decides_off_io(body)) {
    std::function<Parsed()> work = [body, limits] { return parse_batch_request(body, limits); };
    parsed = co_await on_pool<Parsed>(prepare_pool_, runtime::PreparePool::Size::large, std::move(work));
    if (!parsed) co_return refusal(preparing_overloaded(), Route::batch);
  } else {
    parsed = parse_batch_request(body, limits);
  }
  if (!*parsed) co_return error_reply(parsed->error(), Route::batch);

  // Items run concurrently, a window at a time, so the model's batcher packs them into shared
  // forward passes; the window stays under the default queue (32) so one bulk request does not
  // refuse its own items as overloaded. A connection's coroutines share one thread: no locking.
  std::vector<BatchItem>& items = parsed->value();
  struct Gathered {
    explicit Gathered(asio::any_io_executor executor, size_t items) : all_answered(std::move(executor)), replies(items) {}
    asio::steady_timer all_answered;
    std::vector<Reply> replies;
    size_t waiting = 0;
  };
  const asio::any_io_executor executor = co_await asio::this_coro::executor;
  auto gathered = std::make_shared<Gathered>(executor, items.size());
  // A model admits its queue plus the one running; a window past the smallest would refuse the
  // bulk request's own items as overloaded.
  size_t window = bulk_items_in_flight;
  for (const auto& model : registry_.models()) {
    if (model->runner) window = std::min(window, model->runner->queue_capacity() + 1);
  }
  for (size_t begin = 0; begin < items.size(); begin += window) {
    const size_t end = std::min(items.size(), begin + window);
    gathered->waiting = end - begin;
    gathered->all_answered.expires_at(Clock::time_point::max());
    for (size_t i = begin; i < end; ++i) {
      asio::co_spawn(executor, batch_item(socket, items[i], request_id, deadline),
                     [gathered, i](std::exception_ptr failure, Reply answered) {
                       if (failure) {
                         answered = error_reply(
                             api::ApiError::make(api::ErrorCode::internal_error, "The batch item failed"),
                             Route::systemone);
                       }
                       gathered->replies[i] = std::move(answered);
                       if (--gathered->waiting == 0) gathered->all_answered.cancel();
                     });
    }
    error_code ignored;
    co_await gathered->all_answered.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    for (size_t i = begin; i < end; ++i) {
      if (!gathered->replies[i].send) co_return gathered->replies[i];  // the client went away: the rest is not run
    }
  }

  Reply reply;
  reply.body = "{\"results\":[";
  bool first = true;
  for (const Reply& answered : gathered->replies) {
    // {"status":N, then the members of the reply's own object: {"model",…} or {"detail":…}.
    if (!first) reply.body += ',';
    first = false;
    reply.body += "{\"status\":";
    reply.body += std::to_string(answered.status);
    if (answered.body.size() > 2) reply.body += ',';
    reply.body.append(answered.body, 1);
  }
  reply.body += "]}";
  co_return reply;
}

asio::awaitable<Reply> DecideHandler::batch_item(tcp::socket& socket, BatchItem& item, std::string_view request_id,
                                                 Clock::time_point deadline) {
  if (!item.request) co_return error_reply(item.request.error(), Route::systemone);
  auto request = std::make_shared<api::DecisionRequest>(std::move(item.request.value()));
  const std::string name = request->model.value_or(registry_.default_model().value_or(""));
  const registry::ServedModel* served = registry_.resolve(name);
  if (served == nullptr) {
    co_return error_reply(api::ApiError::make(api::ErrorCode::unknown_model, "Unknown model: " + name),
                          Route::systemone);
  }
  if (auto refused = refuse_media(*request, *served)) co_return error_reply(*refused, Route::systemone);
  if (!served->pool) {
    // Named, not a temporary in the co_await expression (see on_pool).
    const bool large = !request->media.empty();
    RunLocally local{std::move(request), std::nullopt, served, large};
    co_return co_await run_locally(socket, Route::systemone, std::move(local), deadline);
  }
  router::UpstreamPool& pool = *served->pool;
  router::UpstreamRequest upstream;
  upstream.target = "/v1/systemone";
  item.body["model"] = pool.upstream_model();  // also when the item named none (the default model)
  api::append_json(upstream.body, item.body);
  upstream.headers.add("Content-Type", "application/json");
  upstream.request_id = request_id;
  upstream.deadline = deadline;
  router::UpstreamReply outcome;
  if (auto failed = co_await pool.forward(upstream, outcome)) co_return refusal(*failed, Route::systemone);
  Reply reply;
  reply.status = outcome.status;
  reply.body = std::move(outcome.body);
  // The worker's reply goes into the results as an object: anything else would break the array.
  const auto object = api::parse_strict_json(reply.body);
  if (const auto* json = std::get_if<api::Json>(&object); json == nullptr || !json->is_object()) {
    co_return error_reply(api::ApiError::make(api::ErrorCode::upstream_bad_response,
                                              "The worker's reply to a batch item is not a JSON object"),
                          Route::systemone);
  }
  co_return reply;
}

}  // namespace s1::server
