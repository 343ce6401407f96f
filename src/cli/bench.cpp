#include "cli/bench.h"

#include "cli/bench_stats.h"
#include "cli/http_client.h"

#include <fmt/format.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <thread>

namespace s1::cli {

WorkloadItem parse_workload_line(std::string_view line, const std::optional<std::string>& model) {
  nlohmann::ordered_json value = nlohmann::ordered_json::parse(line, nullptr, false);
  if (value.is_discarded()) throw std::invalid_argument("not valid JSON");
  if (!value.is_object()) throw std::invalid_argument("a line must be a JSON object");
  WorkloadItem item;
  nlohmann::ordered_json request;
  if (auto it = value.find("request"); it != value.end() && it->is_object()) {
    request = *it;
    if (auto expected = value.find("expected"); expected != value.end() && !expected->is_null()) {
      nlohmann::json answers = nlohmann::json::parse(expected->dump());
      check_expected_answers(answers);
      if (!answers.empty()) item.expected = std::move(answers);
    }
  } else {
    request = std::move(value);
  }
  if (model) request["model"] = *model;
  item.body = request.dump();
  return item;
}

namespace {

struct BenchFlags {
  std::string url;
  std::string workload;
  size_t concurrency = 1;
  std::optional<size_t> requests;
  std::optional<double> duration_s;
  size_t warmup = 0;
  std::string out;
  std::string token_env;
  std::optional<std::string> model;
  std::string path = "/v1/systemone";
  int64_t timeout_ms = 120000;
};

using Clock = std::chrono::steady_clock;

std::vector<WorkloadItem> load_workload(const std::string& file, const std::optional<std::string>& model) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot open workload " + file);
  std::vector<WorkloadItem> items;
  std::string line;
  size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      items.push_back(parse_workload_line(line, model));
    } catch (const std::exception& error) {
      throw std::invalid_argument(fmt::format("{}:{}: {}", file, number, error.what()));
    }
  }
  if (items.empty()) throw std::invalid_argument("workload " + file + " has no requests");
  return items;
}

std::optional<nlohmann::json> answers_of(const std::string& body) {
  nlohmann::json value = nlohmann::json::parse(body, nullptr, false);
  if (value.is_discarded() || !value.is_object()) return std::nullopt;
  auto it = value.find("answers");
  if (it == value.end() || !it->is_object()) return std::nullopt;
  return std::move(*it);
}

int run_bench(const BenchFlags& flags) {
  Url url;
  std::vector<WorkloadItem> items;
  std::optional<std::string> token;
  try {
    url = parse_url(flags.url);
    items = load_workload(flags.workload, flags.model);
  } catch (const std::exception& error) {
    std::cerr << "bench: " << error.what() << "\n";
    return 2;
  }
  if (!flags.token_env.empty()) {
    const char* value = std::getenv(flags.token_env.c_str());
    if (value == nullptr || *value == '\0') {
      std::cerr << "bench: environment variable " << flags.token_env << " is not set or empty\n";
      return 2;
    }
    token = value;
  }
  if (flags.concurrency == 0) {
    std::cerr << "bench: --concurrency must be at least 1\n";
    return 2;
  }

  BenchSettings settings;
  settings.url = url.to_string();
  settings.workload = flags.workload;
  settings.workload_lines = items.size();
  settings.concurrency = flags.concurrency;
  settings.warmup = flags.warmup;
  settings.duration_s = flags.duration_s;
  settings.requests = flags.duration_s ? std::nullopt : std::optional<size_t>(flags.requests.value_or(items.size()));
  settings.model = flags.model;

  HeaderList headers;
  if (token) headers.emplace_back("Authorization", "Bearer " + *token);
  HttpClientOptions options;
  options.read_timeout = std::chrono::milliseconds(flags.timeout_ms);

  std::cerr << fmt::format("bench: {} workload lines, concurrency {}, warm-up {}, {}\n", items.size(), flags.concurrency,
                           flags.warmup,
                           settings.requests ? fmt::format("{} requests", *settings.requests)
                                             : fmt::format("{} s", *settings.duration_s));

  std::atomic<size_t> warmup_next{0};
  std::atomic<size_t> next{0};
  Clock::time_point start;
  Clock::time_point deadline;
  // Everyone finishes warming up before the clock starts, so warm-up never overlaps measurement.
  std::barrier ready(static_cast<std::ptrdiff_t>(flags.concurrency), [&]() noexcept {
    start = Clock::now();
    if (flags.duration_s) {
      deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(*flags.duration_s));
    }
  });
  std::vector<BenchTally> tallies(flags.concurrency);
  std::vector<Clock::time_point> finished(flags.concurrency);
  std::vector<std::thread> workers;
  workers.reserve(flags.concurrency);
  for (size_t worker = 0; worker < flags.concurrency; ++worker) {
    workers.emplace_back([&, worker] {
      HttpClient client(url, options);
      const auto send = [&](const WorkloadItem& item, RequestOutcome& outcome) -> std::optional<std::string> {
        const Clock::time_point sent = Clock::now();
        std::optional<std::string> body;
        try {
          HttpResponse response = client.request("POST", flags.path, item.body, headers);
          outcome.status = response.status;
          if (response.status == 200) body = std::move(response.body);
        } catch (const HttpError& error) {
          outcome.status = 0;
          outcome.connection_error = std::string(http_error_kind_name(error.kind()));
        }
        outcome.latency_ms = std::chrono::duration<double, std::milli>(Clock::now() - sent).count();
        return body;
      };
      for (size_t index = warmup_next++; index < flags.warmup; index = warmup_next++) {
        RequestOutcome ignored;
        send(items[index % items.size()], ignored);
      }
      ready.arrive_and_wait();
      BenchTally& tally = tallies[worker];
      while (true) {
        if (flags.duration_s && Clock::now() >= deadline) break;
        const size_t index = next++;
        if (settings.requests && index >= *settings.requests) break;
        const WorkloadItem& item = items[(flags.warmup + index) % items.size()];
        RequestOutcome outcome;
        std::optional<std::string> body = send(item, outcome);
        tally.record(outcome);
        if (item.expected) {
          tally.quality.merge(grade_answers(*item.expected, body ? answers_of(*body) : std::nullopt));
        }
      }
      finished[worker] = Clock::now();
    });
  }
  for (std::thread& worker : workers) worker.join();
  Clock::time_point end = start;
  for (const Clock::time_point& at : finished) end = std::max(end, at);

  BenchTally total;
  for (const BenchTally& tally : tallies) total.merge(tally);
  const double elapsed_s = std::chrono::duration<double>(end - start).count();
  const BenchSummary summary = summarize_bench(settings, total, elapsed_s);
  std::cout << format_bench_summary(summary) << std::flush;
  if (!flags.out.empty()) {
    std::ofstream out(flags.out, std::ios::binary | std::ios::trunc);
    out << bench_summary_to_json(summary).dump(2) << "\n";
    if (!out) {
      std::cerr << "bench: cannot write " << flags.out << "\n";
      return 2;
    }
  }
  return 0;
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto flags = std::make_shared<BenchFlags>();
  CLI::App* command =
      app.add_subcommand("bench", "Closed-loop load generator: replay a JSONL workload and report latency, "
                                  "throughput, errors and answer quality");
  command->add_option("--url", flags->url, "Base URL of the server, http://host:port[/base]")->required();
  command->add_option("--workload", flags->workload, "JSONL workload (bench/workloads/README.md)")
      ->required()
      ->check(CLI::ExistingFile);
  command->add_option("--concurrency", flags->concurrency, "Client threads, each with one keep-alive connection (default 1)");
  auto* requests = command->add_option("--requests", flags->requests,
                                       "Measured requests (default: one pass over the workload)");
  auto* duration = command->add_option("--duration", flags->duration_s, "Measure for this many seconds instead");
  requests->excludes(duration);
  command->add_option("--warmup", flags->warmup, "Requests sent first and not counted (default 0)");
  command->add_option("--out", flags->out, "Also write the summary as JSON to this file");
  command->add_option("--token-env", flags->token_env, "Environment variable holding the bearer key (never printed)");
  command->add_option("--model", flags->model, "Set \"model\" in every request (default: the server's default model)");
  command->add_option("--path", flags->path, "Request path (default /v1/systemone)");
  command->add_option("--timeout-ms", flags->timeout_ms, "Per-request timeout in ms (default 120000)");
  command->callback([flags] { std::exit(run_bench(*flags)); });
}

}  // namespace s1::cli
