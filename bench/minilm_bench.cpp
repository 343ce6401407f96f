// all-MiniLM-L6-v2 end-to-end timing (tokenised ids → pooled, normalised embeddings), the shapes of
// bench/peers/minilm_peers.py: one 128-token sequence (batch 1) and 32 × 128 tokens, 2 threads,
// fp32 and bf16, median (p10, p90) of --reps runs after --warmup runs. Also one embedding-similarity
// decision (state ≈ 100 tokens, 3 questions, 8 candidates, warm candidate cache).
//
//   s1_minilm_bench [--model-dir DIR] [--reps 20] [--warmup 3] [--threads 2] [--precision fp32|bf16] [--b1-only 1]
//                   [--decision-only 1]
// Prints one JSON object (docs/benchmarks/minilm.md).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "api/request.h"
#include "backend/cpu/linear.h"
#include "backend/cpu/parallel.h"
#include "decide/contracts/embedding_similarity.h"
#include "model/bert/sentence_encoder.h"
#include "timing.h"

namespace {

using s1::backend::cpu::Precision;

using s1::bench::json;
using s1::bench::Summary;
using s1::bench::timed;

// n different texts' ids of exactly `length` tokens: [CLS] words… [SEP].
std::vector<std::vector<int32_t>> sequences(const s1::bert::SentenceEncoder& encoder, size_t n, size_t length) {
  const std::string words =
      "the customer reported that the application crashed after the latest update and asked whether a refund "
      "or a replacement licence could be issued before the end of the month because the team depends on the "
      "dashboard every morning for planning";
  const std::vector<int32_t> base = encoder.tokenize(words).ids;  // [CLS] … [SEP]
  std::vector<std::vector<int32_t>> out;
  for (size_t i = 0; i < n; ++i) {
    std::vector<int32_t> ids{base.front()};
    for (size_t t = 0; ids.size() + 1 < length; ++t) ids.push_back(base[1 + (t + i) % (base.size() - 2)]);
    ids.push_back(base.back());
    out.push_back(std::move(ids));
  }
  return out;
}

s1::api::DecisionRequest decision_request() {
  const std::string body =
      R"({"state": "Ticket #4411 from a customer on the enterprise plan: since the update last Tuesday the mobile app crashes every time I try to upload a photo to a project, and the web dashboard shows an error 500 when I open the billing page. We were also charged twice for the March invoice. Our team of forty people relies on the app every morning, so please fix this quickly and refund the duplicate charge.",
  "questions": {
    "team": {"type": "choice", "criteria": {"billing": "payments, refunds, invoices", "technical": "bugs, crashes, errors", "sales": "pricing, quotes, new licenses", "account": "logins, passwords, users"}},
    "urgency": {"type": "score", "criteria": ["low", "medium", "high"]},
    "refund": {"type": "noul", "instructions": "The customer asks for a refund"}}})";
  auto parsed = s1::api::parse_system_one_request(body, s1::api::RequestLimits{64, true});
  if (!parsed.ok()) std::abort();
  return std::move(parsed.value());
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_dir = s1::decide::default_model_directory().string();
  int reps = 20, warmup = 3, threads = 2;
  std::string only;            // --precision fp32|bf16: run one precision only (profiling)
  bool b1_only = false;        // --b1-only 1: only the batch-1 latency (profiling)
  bool decision_only = false;  // --decision-only 1: only the decision (profiling)
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--model-dir")
      model_dir = argv[i + 1];
    else if (flag == "--reps")
      reps = std::atoi(argv[i + 1]);
    else if (flag == "--warmup")
      warmup = std::atoi(argv[i + 1]);
    else if (flag == "--threads")
      threads = std::atoi(argv[i + 1]);
    else if (flag == "--precision")
      only = argv[i + 1];
    else if (flag == "--b1-only")
      b1_only = std::atoi(argv[i + 1]) != 0;
    else if (flag == "--decision-only")
      decision_only = std::atoi(argv[i + 1]) != 0;
    else {
      std::fprintf(stderr, "unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  s1::backend::cpu::set_thread_count(threads);
  std::printf("{\"threads\": %d, \"reps\": %d, \"warmup\": %d, \"results\": {", threads, reps, warmup);
  bool first = true;
  for (const Precision precision : {Precision::fp32, Precision::bf16}) {
    if (!s1::backend::cpu::linear_supported(precision)) continue;
    const char* name = precision == Precision::fp32 ? "fp32" : "bf16";
    if (!only.empty() && only != name) continue;
    const auto decision_summary = [&](int64_t& tokens) {
      s1::decide::EmbeddingSimilaritySettings settings;
      settings.name = "bench";
      settings.precision = precision;
      auto engine = s1::decide::make_embedding_similarity_engine(model_dir, settings);
      const s1::api::DecisionRequest request = decision_request();
      return timed(warmup, reps, [&] {
        auto plan = engine->prepare(request, {});
        tokens = (*plan)->input_tokens;
        auto outputs = engine->run(**plan);
        (void)engine->finish(request, **plan, std::move(outputs.value()));
      });
    };
    int64_t tokens = 0;
    if (decision_only) {
      const Summary decision = decision_summary(tokens);
      std::printf("%s\"%s\": {\"decision_warm_cache_ms\": %s, \"decision_input_tokens\": %lld}", first ? "" : ", ",
                  name, json(decision).c_str(), static_cast<long long>(tokens));
      first = false;
      continue;
    }
    auto encoder = s1::bert::SentenceEncoder::open(model_dir, precision);
    const auto one = sequences(encoder, 1, 128);
    const auto batch = sequences(encoder, 32, 128);
    const Summary b1 = timed(warmup, reps, [&] { (void)encoder.embed(one); });
    if (b1_only) {
      std::printf("%s\"%s\": {\"latency_b1_ms\": %s}", first ? "" : ", ", name, json(b1).c_str());
      first = false;
      continue;
    }
    const Summary b32 = timed(warmup, reps, [&] { (void)encoder.embed(batch); });
    const Summary decision = decision_summary(tokens);
    std::printf(
        "%s\"%s\": {\"latency_b1_ms\": %s, \"batch32_ms\": %s, \"sequences_per_s_b32\": %.2f, "
        "\"decision_warm_cache_ms\": %s, \"decision_input_tokens\": %lld}",
        first ? "" : ", ", name, json(b1).c_str(), json(b32).c_str(), 32000.0 / b32.median_ms, json(decision).c_str(),
        static_cast<long long>(tokens));
    std::fflush(stdout);
    first = false;
  }
  std::printf("}}\n");
  return 0;
}
