#include "cli/serve.h"

#include "decide/contract_table.h"
#include "registry/config.h"
#include "registry/model_registry.h"
#include "router/upstream_pool.h"
#include "server/http_server.h"
#include "server/metrics.h"

#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdlib>
#include <memory>

namespace s1::cli {
namespace {

struct ServeFlags {
  std::vector<std::string> models;
  std::vector<std::string> upstreams;
  std::string config_file;
  std::optional<std::string> host;
  std::optional<uint16_t> port;
  std::string api_key_file;
  std::optional<size_t> max_body;
  std::optional<size_t> queue;
  std::optional<int> overload_status;
  std::optional<int64_t> timeout_ms;
  std::optional<std::string> default_model;
  std::optional<size_t> max_questions;
  std::optional<size_t> max_images;
  std::optional<size_t> max_image_bytes;
  std::optional<uint64_t> max_image_pixels;
  std::optional<int64_t> token_budget;
  std::optional<int64_t> drain_ms;
  std::optional<int> http_threads;
  std::optional<int> prepare_threads;
  std::optional<int64_t> header_timeout_ms;
  std::optional<size_t> max_connections;
};

registry::ServerConfig build_config(const ServeFlags& flags) {
  registry::ServerConfig config;
  if (!flags.config_file.empty()) config = registry::read_config_file(flags.config_file, config);
  if (const char* keys = std::getenv("S1SERVE_API_KEYS"); keys != nullptr && *keys != '\0') {
    for (auto& key : registry::parse_api_key_list(keys)) config.api_keys.push_back(std::move(key));
  }
  if (!flags.api_key_file.empty()) config.api_keys = registry::read_api_key_file(flags.api_key_file);
  if (flags.host) config.host = *flags.host;
  if (flags.port) config.port = *flags.port;
  if (flags.max_body) config.max_body_bytes = *flags.max_body;
  if (flags.queue) config.queue_capacity = *flags.queue;
  if (flags.overload_status) config.overload_status = *flags.overload_status;
  if (flags.timeout_ms) config.timeout = std::chrono::milliseconds(*flags.timeout_ms);
  if (flags.max_questions) config.max_questions = *flags.max_questions;
  if (flags.max_images) config.max_images = *flags.max_images;
  if (flags.max_image_bytes) config.max_image_bytes = *flags.max_image_bytes;
  if (flags.max_image_pixels) config.max_image_pixels = *flags.max_image_pixels;
  if (flags.token_budget) config.token_budget = *flags.token_budget;
  if (flags.drain_ms) config.drain_timeout = std::chrono::milliseconds(*flags.drain_ms);
  if (flags.http_threads) config.http_threads = *flags.http_threads;
  if (flags.prepare_threads) config.prepare_threads = *flags.prepare_threads;
  if (flags.header_timeout_ms) config.header_timeout = std::chrono::milliseconds(*flags.header_timeout_ms);
  if (flags.max_connections) config.max_connections = *flags.max_connections;
  for (const std::string& source : flags.models) {
    registry::ModelConfig model;
    model.source = source;
    config.models.push_back(std::move(model));
  }
  for (const std::string& upstream : flags.upstreams) config.models.push_back(registry::parse_upstream_flag(upstream));
  if (flags.default_model) config.default_model = *flags.default_model;
  // No model named anywhere: serve the default model, all-MiniLM-L6-v2 (docs/models.md). When it
  // is not installed, load_model's error tells the user to run scripts/fetch-default-model.
  if (config.models.empty()) {
    registry::ModelConfig default_model;
    default_model.source = "minilm";
    config.models.push_back(std::move(default_model));
    if (!config.default_model) config.default_model = "minilm";
  }
  return config;
}

registry::ServedModel make_upstream_model(const registry::ModelConfig& model, server::Metrics& metrics) {
  const registry::UpstreamConfig& upstream = *model.upstream;
  const std::string name = *model.name;
  router::UpstreamSettings settings;
  settings.urls = upstream.urls;
  settings.upstream_model = upstream.model;
  settings.credential = registry::read_upstream_credential(upstream, name);
  settings.connect_timeout = upstream.connect_timeout;
  settings.health_interval = upstream.health_interval;
  settings.health_timeout = upstream.health_timeout;
  settings.response_cap = upstream.response_cap;
  settings.max_in_flight = upstream.max_in_flight;
  router::PoolObserver observer;
  // Every forwarded request writes one of these series: their labels are rendered once.
  struct RequestSeries {
    std::string replica, outcome;
    server::Metrics::HotSeries series;
  };
  auto request_series = std::make_shared<std::vector<RequestSeries>>();
  for (const std::string& url : upstream.urls) {
    for (const std::string_view outcome : router::request_outcomes) {
      const std::string labels =
          server::Metrics::render_labels({{"model", name}, {"replica", url}, {"outcome", std::string(outcome)}});
      request_series->push_back(
          {url, std::string(outcome), metrics.hot(server::Series{"s1serve_upstream_requests_total", labels})});
    }
  }
  observer.on_request = [&metrics, request_series](const std::string& replica, const std::string& outcome) {
    for (const RequestSeries& series : *request_series) {
      if (series.outcome == outcome && series.replica == replica) {
        metrics.add_counter(series.series);
        return;
      }
    }
  };
  observer.on_health = [&metrics, name](const std::string& replica, bool healthy) {
    metrics.set_gauge("s1serve_upstream_replica_healthy", {{"model", name}, {"replica", replica}}, healthy ? 1.0 : 0.0);
  };
  try {
    auto pool = std::make_unique<router::UpstreamPool>(name, std::move(settings), std::move(observer));
    for (const std::string& url : pool->replica_urls()) {
      metrics.set_gauge("s1serve_upstream_replica_healthy", {{"model", name}, {"replica", url}}, 1.0);
    }
    return registry::ServedModel{name, model.aliases, registry::release_date_or_build(model.release_date), nullptr,
                                 std::move(pool), nullptr};
  } catch (const std::invalid_argument& error) {
    throw registry::ConfigError("upstream model '" + name + "': " + error.what());
  }
}

int serve(const ServeFlags& flags) {
  // Sockets write with MSG_NOSIGNAL; a log written to a pipe whose reader died must fail the write,
  // not kill the process in the middle of a graceful stop.
  std::signal(SIGPIPE, SIG_IGN);
  registry::ServerConfig config;
  auto metrics = std::make_unique<server::Metrics>();
  registry::ModelRegistry registry;
  try {
    config = build_config(flags);
    for (const registry::ModelConfig& model : config.models) {
      if (model.upstream) {
        registry.add(make_upstream_model(model, *metrics));
        continue;
      }
      decide::LoadedModel loaded = decide::load_model(model.source);
      const std::string name = model.name.value_or(loaded.name);
      std::vector<std::string> aliases = model.aliases.empty() ? loaded.aliases : model.aliases;
      // The configuration's date wins over the decision file's.
      std::string release_date =
          registry::release_date_or_build(model.release_date ? model.release_date : loaded.engine->info().release_date);
      runtime::RunnerOptions runner_options{model.queue_capacity.value_or(config.queue_capacity), model.batch};
      if (model.prefix_cache_bytes) runner_options.prefix_cache_bytes = *model.prefix_cache_bytes;
      server::Metrics* sink = metrics.get();
      runtime::RunnerObserver observer;
      observer.on_batch = [sink, labels = server::Metrics::render_labels({{"model", name}})](size_t requests,
                                                                                             int64_t tokens) {
        sink->observe(server::Series{"s1serve_batch_requests", labels}, static_cast<double>(requests));
        sink->observe(server::Series{"s1serve_batch_tokens", labels}, static_cast<double>(tokens));
      };
      observer.on_state = [sink, name](runtime::ModelState state) {
        sink->set_gauge("s1serve_model_ready", {{"model", name}}, state == runtime::ModelState::ready ? 1.0 : 0.0);
        spdlog::info("model {} is {}", name, runtime::model_state_name(state));
      };
      std::unique_ptr<registry::ServedCheckpoint> checkpoint;
      if (const auto location = decide::checkpoint_location(model.source)) {
        checkpoint = std::make_unique<registry::ServedCheckpoint>(*location, registry::describe_checkpoint(*location));
      }
      registry.add(registry::ServedModel{
          name, std::move(aliases), std::move(release_date),
          std::make_unique<runtime::ModelRunner>(name, std::move(loaded.engine), runner_options, std::move(observer)),
          nullptr, std::move(checkpoint)});
    }
    registry.set_default_model(config.default_model, config.default_model_aliases);
  } catch (const std::exception& error) {
    spdlog::error("{}", error.what());
    return 2;
  }


  server::HttpServer server(config, registry, *metrics);
  uint16_t port = 0;
  try {
    port = server.listen();
  } catch (const std::exception& error) {
    spdlog::error("cannot listen on {}:{}: {}", config.host, config.port, error.what());
    return 2;
  }
  if (config.api_keys.empty()) {
    const bool loopback = config.host == "127.0.0.1" || config.host == "::1" || config.host == "localhost";
    if (!loopback) spdlog::warn("no API keys configured and listening on {}: anyone who can reach it may use it", config.host);
  }
  registry.start_all();
  spdlog::info("s1serve {} listening on http://{}:{} with {} model(s)", S1SERVE_VERSION, config.host, port,
               registry.models().size());
  spdlog::default_logger()->flush();  // supervisors and tests wait for this line: not for the log's window
  server.run();
  registry.stop_all();
  spdlog::info("stopped");
  return 0;
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* command = app.add_subcommand("serve", "Serve decisions over HTTP (the default command)");
  command->add_option("--model", flags->models,
                      "Model to serve: a checkpoint directory, a .gguf file, a known name, or a test backend mock:NAME "
                      "(repeatable)");
  command->add_option("--upstream", flags->upstreams,
                      "Upstream pool NAME=URL[,URL...] of /v1/systemone workers served under NAME (repeatable)");
  command->add_option("--config", flags->config_file, "JSON configuration file (docs/configuration.md)")
      ->check(CLI::ExistingFile);
  command->add_option("--host", flags->host, "Address to bind (default 127.0.0.1)");
  command->add_option("--port", flags->port, "Port to bind (default 8080; 0 picks a free port)");
  command->add_option("--api-key-file", flags->api_key_file, "File with one API key per line")->check(CLI::ExistingFile);
  command->add_option("--max-body", flags->max_body, "Largest request body in bytes (default 4194304)");
  command->add_option("--queue", flags->queue, "Waiting requests per model before 503 (default 32)");
  command->add_option("--overload-status", flags->overload_status, "Status of a full queue's refusal: 503 or 529")
      ->check(CLI::IsMember({503, 529}));
  command->add_option("--timeout-ms", flags->timeout_ms, "Deadline per request in ms (default 60000)");
  command->add_option("--default-model", flags->default_model, "Model used when a request names none");
  command->add_option("--max-questions", flags->max_questions, "Questions per request (default 400)");
  command->add_option("--max-images", flags->max_images, "Images per request; a model may take fewer (default 8)")
      ->check(CLI::Range(0, 1000));
  command->add_option("--max-image-bytes", flags->max_image_bytes, "Encoded bytes per image (default 16777216)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 32));
  command->add_option("--max-image-pixels", flags->max_image_pixels,
                      "Pixels per image, checked before decoding; a model may take fewer (default 20000000)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 32));
  command->add_option("--token-budget", flags->token_budget, "Input tokens per request (default 65536)");
  command->add_option("--drain-ms", flags->drain_ms, "Shutdown drain budget in ms (default 30000)");
  command->add_option("--http-threads", flags->http_threads, "HTTP I/O threads (default 2)");
  command->add_option("--prepare-threads", flags->prepare_threads,
                      "Threads parsing large bodies, rendering and tokenising (default 2)")
      ->check(CLI::Range(1, 256));
  command->add_option("--header-timeout-ms", flags->header_timeout_ms,
                      "Time for a request's header to arrive before 408, in ms (default 10000)")
      ->check(CLI::Range(int64_t{1}, int64_t{3'600'000}));
  command->add_option("--max-connections", flags->max_connections,
                      "Open connections beyond which none are accepted (default 4096)")
      ->check(CLI::Range(size_t{1}, size_t{1'000'000}));
  command->callback([flags] { std::exit(serve(*flags)); });
}

}  // namespace s1::cli
