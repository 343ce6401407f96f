// The API layer's cost per request: strict JSON parse + validation of a ~2 KiB System One body, and
// serialisation of its answers (issue 2's goal: under 50 µs together); and the router's strict-JSON
// scan of a forwarded body (docs/benchmarks/router.md, "Strict-JSON scan").
#include "api/json.h"
#include "api/request.h"
#include "api/response.h"

#include <benchmark/benchmark.h>

#include <string>
#include <variant>

namespace {

std::string two_kib_request() {
  std::string state = "Ticket #48213 from a long-time customer. ";
  while (state.size() < 1200) state += "I was charged twice for my subscription this month and nobody answers my emails. ";
  return R"({"model":"mock-ramp","state":{"ticket":{"subject":"Double charge","body":")" + state +
         R"("},"customer":{"plan":"pro","since":2019,"tags":["vip","eu"]}},"questions":{
    "team":{"type":"choice","instructions":"Which team should handle this ticket?","criteria":{"billing":"Payments and invoices","technical":"Bugs and errors","sales":{"scope":"pricing"},"account":null}},
    "refund":{"type":"noul","instructions":"Does the customer ask for a refund?","criteria":{"true":"asks for money back","false":"no refund request"}},
    "anger":{"type":"score","instructions":"How upset is the customer?","criteria":["calm","annoyed","angry","furious"]},
    "language":{"type":"choice","instructions":"Language?","criteria":{"en":null,"de":null,"fr":null}}}})";
}

s1::api::DecisionResult answers_for(const s1::api::DecisionRequest& request) {
  s1::api::DecisionResult result;
  result.model = "mock-ramp";
  result.input_tokens = 1234;
  for (const auto& question : request.questions) {
    s1::api::Answer answer;
    answer.type = question.type;
    for (size_t i = 0; i < question.label_count(); ++i) answer.probabilities.push_back(0.1234567890123 + 0.01 * static_cast<double>(i));
    answer.confidence = 0.4978614336622327;
    answer.score = 1.2345678901234567;
    result.answers.push_back(answer);
  }
  return result;
}

void parse_and_validate(benchmark::State& state) {
  const std::string body = two_kib_request();
  const s1::api::RequestLimits limits{64, true};
  for (auto _ : state) {
    auto request = s1::api::parse_system_one_request(body, limits);
    benchmark::DoNotOptimize(request);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
  state.counters["body_bytes"] = static_cast<double>(body.size());
}
BENCHMARK(parse_and_validate);

void serialise(benchmark::State& state) {
  const auto request = s1::api::parse_system_one_request(two_kib_request(), {64, true});
  const auto result = answers_for(request.value());
  for (auto _ : state) {
    std::string out = s1::api::serialize_system_one_response(request.value(), result);
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(serialise);

void parse_validate_serialise(benchmark::State& state) {
  const std::string body = two_kib_request();
  const s1::api::RequestLimits limits{64, true};
  for (auto _ : state) {
    auto request = s1::api::parse_system_one_request(body, limits);
    std::string out = s1::api::serialize_system_one_response(request.value(), answers_for(request.value()));
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(parse_validate_serialise);

// Bodies a router forwards: bench/http/systemone_post.lua's, long states (1 and 20 KB of ASCII with
// escapes, 4 KB of raw UTF-8 or of \u escapes) and many questions.
std::string wrk_body() {
  return R"({"model":"mock-ramp","state":"Ticket: I was charged twice for my subscription this month and nobody answers.",)"
         R"("questions":{"team":{"type":"choice","instructions":"Which team?","criteria":{"billing":"Payments","technical":null,)"
         R"("sales":{"scope":"pricing"}}},"refund":{"type":"noul","instructions":"Refund?"},"anger":{"type":"score",)"
         R"("instructions":"How angry?","criteria":["calm","annoyed","furious"]}}})";
}

std::string body_with_state(const std::string& sentence, size_t bytes) {
  std::string state;
  while (state.size() < bytes) state += sentence;
  return R"({"model":"mock-ramp","state":")" + state +
         R"(","questions":{"team":{"type":"choice","instructions":"Which team?","criteria":{"billing":"Payments","technical":null}},)"
         R"("refund":{"type":"noul","instructions":"Refund?"}},"temperature":0.5})";
}

std::string ascii_state_body(size_t bytes) {
  return body_with_state(R"(Customer wrote:\n\t\"I was charged twice for my subscription\" \\ order #4821/7.\r\n)", bytes);
}

std::string many_questions_body() {
  std::string questions;
  for (int i = 0; i < 32; ++i) {
    if (i > 0) questions += ',';
    const std::string n = std::to_string(i);
    questions += R"("q)" + n + R"(":{"type":"choice","instructions":"Which option fits question )" + n +
                 R"( best?","criteria":{"first":"The first option","second":null,"third":{"scope":"x"}}})";
  }
  return R"({"model":"mock-ramp","state":{"ticket":"Double charge","customer":{"plan":"pro","since":2019,"tags":["vip","eu"]}},"questions":{)" +
         questions + "}}";
}

void strict_scan(benchmark::State& state, const std::string& body) {
  if (!std::holds_alternative<s1::api::StrictJsonScan>(s1::api::scan_strict_json(body, "model"))) {
    state.SkipWithError("the body is not strict JSON");
    return;
  }
  for (auto _ : state) {
    auto scan = s1::api::scan_strict_json(body, "model");
    benchmark::DoNotOptimize(scan);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
  state.counters["body_bytes"] = static_cast<double>(body.size());
}
BENCHMARK_CAPTURE(strict_scan, wrk_body, wrk_body());
BENCHMARK_CAPTURE(strict_scan, ascii_state_1k, ascii_state_body(1024));
BENCHMARK_CAPTURE(strict_scan, ascii_state_20k, ascii_state_body(20 * 1024));
BENCHMARK_CAPTURE(strict_scan, utf8_state_4k,
                  body_with_state("Kunde schreibt: doppelt belastet, Größe ändern. 客户说：我被扣了两次款。 ¿Reembolso? 😠 ", 4096));
BENCHMARK_CAPTURE(strict_scan, u_escaped_state_4k,
                  body_with_state(R"(Kunde: Gr\u00f6\u00dfe \u5ba2\u6237 \ud83d\ude20 refund. )", 4096));
BENCHMARK_CAPTURE(strict_scan, many_questions, many_questions_body());

}  // namespace

BENCHMARK_MAIN();
