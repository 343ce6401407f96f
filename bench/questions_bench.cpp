// What asking k questions in one request costs against asking them in k requests, for any model
// s1serve serves (docs/benchmarks/questions.md). The request goes through the model's own contract
// (prepare → run → finish, as the server's executor runs it), so prompt rendering, tokenisation,
// prefix sharing and readout are all inside the timing; HTTP is not.
//
//   s1_questions_bench --model SOURCE [--questions 5] [--options 4] [--state-words 150]
//                      [--mode questions|options] [--reps 10] [--warmup 2] [--threads 2]
//
// --mode questions: one request with k questions (types cycled over those the model answers)
//                   against k requests of one question each, all over the same state;
// --mode options:   one choice question with k options against k requests of a one-option
//                   question (for contracts that run one sequence per candidate, e.g. Open-Jev).
// Each repetition runs both sides back to back, alternating which goes first, so both see the same
// machine load; the ratio is the median of the per-repetition ratios. Prints one JSON object.

#include "timing.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "api/request.h"
#include "backend/cpu/parallel.h"
#include "decide/contract_table.h"

namespace {

using s1::api::Json;
using s1::api::QuestionType;

// Plain English words, so that every tokenizer splits the state into a realistic number of tokens.
constexpr const char* state_words[] = {
    "customer", "order",    "refund",  "shipping", "delayed", "account", "billing", "invoice", "payment",
    "package",  "tracking", "support", "request",  "urgent",  "damaged", "return",  "replace", "address",
    "charge",   "card",     "the",     "was",      "and",     "not",     "has",     "since",   "week",
    "please",   "again",    "error",   "login",    "reset",   "message", "team",    "product", "update"};

std::string state_text(std::size_t words) {
  std::mt19937 generator(7);
  std::uniform_int_distribution<std::size_t> pick(0, std::size(state_words) - 1);
  std::string text;
  for (std::size_t i = 0; i < words; ++i) {
    if (i) text += (i % 12 == 0) ? ". " : " ";
    text += state_words[pick(generator)];
  }
  return text + ".";
}

// A question as the request schema spells it (§2.3); its key is added by the caller.
Json choice_question(std::size_t options, std::size_t first_option = 0) {
  Json criteria = Json::object();
  for (std::size_t o = first_option; o < first_option + options; ++o) {
    criteria["option_" + std::to_string(o + 1)] = "route it to team " + std::to_string(o + 1);
  }
  return {{"type", "choice"}, {"instructions", "Which team should handle this ticket?"}, {"criteria", criteria}};
}

Json question_json(QuestionType type, std::size_t options) {
  switch (type) {
    case QuestionType::choice:
      return choice_question(options);
    case QuestionType::noul:
      return {{"type", "noul"},
              {"instructions", "Does the customer ask for a refund?"},
              {"criteria", {{"true", "a refund is requested"}, {"false", "no refund is requested"}}}};
    case QuestionType::score:
      return {{"type", "score"},
              {"instructions", "How urgent is this ticket?"},
              {"criteria", {"not urgent", "low", "medium", "high", "critical"}}};
  }
  throw std::logic_error("unknown question type");
}

s1::api::DecisionRequest parse(const Json& body) {
  auto request = s1::api::parse_system_one_request(body.dump(), {.max_questions = 4096, .has_default_model = true});
  if (!request) throw std::runtime_error("benchmark request rejected: " + request.error().message);
  return std::move(*request);
}

// prepare → run → finish as the server's executor does; the request's input_tokens.
int64_t decide(s1::runtime::Engine& engine, const s1::api::DecisionRequest& request) {
  auto plan = engine.prepare(request, {.token_budget = 1 << 30});
  if (!plan) throw std::runtime_error("prepare failed: " + plan.error().message);
  auto outputs = engine.run(**plan);
  if (!outputs) throw std::runtime_error("run failed: " + outputs.error().message);
  auto answers = engine.finish(request, **plan, std::move(*outputs));
  if (!answers) throw std::runtime_error("finish failed: " + answers.error().message);
  return (*plan)->input_tokens;
}

double elapsed_ms(const std::function<void()>& run) {
  const auto start = std::chrono::steady_clock::now();
  run();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string source, mode = "questions";
  int reps = 10, warmup = 2, threads = 2;
  std::size_t questions = 5, options = 4, words = 150;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--model") source = value;
    else if (flag == "--mode") mode = value;
    else if (flag == "--questions") questions = std::stoul(value);
    else if (flag == "--options") options = std::stoul(value);
    else if (flag == "--state-words") words = std::stoul(value);
    else if (flag == "--reps") reps = std::stoi(value);
    else if (flag == "--warmup") warmup = std::stoi(value);
    else if (flag == "--threads") threads = std::stoi(value);
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (source.empty() || (mode != "questions" && mode != "options") || questions == 0 || reps < 1) {
    std::fprintf(stderr, "usage: s1_questions_bench --model SOURCE [--mode questions|options] [--questions K] ...\n");
    return 2;
  }
  s1::backend::cpu::set_thread_count(threads);
  try {
    s1::decide::LoadedModel model = s1::decide::load_model(source);
    const s1::runtime::ModelInfo info = model.engine->info();
    const Json state = state_text(words);

    Json together = Json::object();
    std::vector<Json> alone;
    for (std::size_t q = 0; q < questions; ++q) {
      const std::string key = "q" + std::to_string(q + 1);
      if (mode == "questions") {
        const Json question = question_json(info.question_types[q % info.question_types.size()], options);
        together[key] = question;
        alone.push_back(Json{{key, question}});
      } else {
        alone.push_back(Json{{key, choice_question(1, q)}});
      }
    }
    if (mode == "options") together["q1"] = choice_question(questions);
    const s1::api::DecisionRequest one_request = parse({{"state", state}, {"questions", together}});
    std::vector<s1::api::DecisionRequest> single_requests;
    for (const Json& list : alone) single_requests.push_back(parse({{"state", state}, {"questions", list}}));

    int64_t together_tokens = 0, alone_tokens = 0;
    const auto run_together = [&] { together_tokens = decide(*model.engine, one_request); };
    const auto run_alone = [&] {
      alone_tokens = 0;
      for (const auto& request : single_requests) alone_tokens += decide(*model.engine, request);
    };
    for (int i = 0; i < warmup; ++i) {
      run_together();
      run_alone();
    }
    std::vector<double> together_ms, alone_ms, ratios;
    for (int i = 0; i < reps; ++i) {
      double t = 0, a = 0;
      if (i % 2 == 0) {
        t = elapsed_ms(run_together);
        a = elapsed_ms(run_alone);
      } else {
        a = elapsed_ms(run_alone);
        t = elapsed_ms(run_together);
      }
      together_ms.push_back(t);
      alone_ms.push_back(a);
      ratios.push_back(a / t);
    }
    std::printf(
        "{\"model\": \"%s\", \"mode\": \"%s\", \"k\": %zu, \"state_words\": %zu, \"threads\": %d, \"reps\": %d, "
        "\"one_request_ms\": %.3f, \"k_requests_ms\": %.3f, \"k_requests_over_one\": %.3f, "
        "\"one_request_input_tokens\": %lld, \"k_requests_input_tokens\": %lld}\n",
        model.name.c_str(), mode.c_str(), questions, words, threads, reps, median(together_ms), median(alone_ms),
        median(ratios), static_cast<long long>(together_tokens), static_cast<long long>(alone_tokens));
  } catch (const std::exception& error) {
    std::fprintf(stderr, "s1_questions_bench: %s\n", error.what());
    return 1;
  }
  return 0;
}
