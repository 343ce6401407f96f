// The API layer's cost per request: strict JSON parse + validation of a ~2 KiB System One body, and
// serialisation of its answers (issue 2's goal: under 50 µs together).
#include "api/request.h"
#include "api/response.h"

#include <benchmark/benchmark.h>

#include <string>

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

}  // namespace

BENCHMARK_MAIN();
