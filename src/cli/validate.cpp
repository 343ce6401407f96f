// `s1serve validate --model DIR --reference FILE.jsonl [--max-prob-drift X] [--max-score-drift Y]
// [--decision-margin M]`: how a user checks a real checkpoint against its reference worker.
//
// Reference format: one JSON object per line,
//   {"request": <a POST /v1/systemone body>, "answers": {<question key>: <System One answer>}}
// where each answer has the API's answer shape (choice: "choice", "probabilities" keyed by option name;
// noul: "noul"; score: "score", "probabilities" keyed "0", "1", …). Other members (input_tokens, …) are
// ignored; a line may instead carry the whole response as "response": {"answers": …}. This is what
// tools/reference/*_contract.py print.
//
// The model is loaded exactly as `serve` loads it (decide::load_model) and every request runs through
// the contract's prepare → run → finish with no token budget. Reported: the largest per-label
// probability difference (noul: P(true)), the largest score difference, and decision flips (a
// different choice, or score argmax, where the reference's top-two margin is at least M; smaller
// margins are counted as near ties and never fail). Exit status 0 when max |Δp| ≤ X, max |Δscore| ≤ Y,
// no flips and no request failed; 1 when a gate fails; 2 when the model or the file cannot be used.

#include "cli/validate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "api/json.h"
#include "api/request.h"
#include "decide/contract_table.h"

namespace s1::cli {
namespace {

struct ValidateFlags {
  std::string model;
  std::string reference;
  double max_prob_drift = 0.02;
  double max_score_drift = 0.1;
  double decision_margin = 0.05;
};

struct Tally {
  std::size_t requests = 0;
  std::size_t questions = 0;
  std::size_t failed_requests = 0;
  std::size_t decision_flips = 0;
  std::size_t near_ties = 0;
  double max_prob_drift = 0.0;
  double max_score_drift = 0.0;
  std::string worst_question;  // where max_prob_drift was seen
};

// The reference's probabilities in label order, read by the request's label names.
std::vector<double> reference_probabilities(const api::Json& answer, const api::Question& question) {
  std::vector<double> probabilities;
  switch (question.type) {
    case api::QuestionType::noul: {
      const double p_true = answer.at("noul").get<double>();
      return {p_true, 1.0 - p_true};
    }
    case api::QuestionType::choice:
      for (const api::ChoiceOption& option : question.options) {
        probabilities.push_back(answer.at("probabilities").at(option.name).get<double>());
      }
      return probabilities;
    case api::QuestionType::score:
      for (std::size_t i = 0; i < question.levels.size(); ++i) {
        probabilities.push_back(answer.at("probabilities").at(std::to_string(i)).get<double>());
      }
      return probabilities;
  }
  throw std::logic_error("unknown question type");
}

// Top-two margin of a distribution (1 for a single label) and its first argmax.
std::pair<double, std::size_t> margin_and_argmax(const std::vector<double>& p) {
  const auto best = static_cast<std::size_t>(std::max_element(p.begin(), p.end()) - p.begin());
  double second = 0.0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (i != best) second = std::max(second, p[i]);
  }
  return {p.size() > 1 ? p[best] - second : 1.0, best};
}

void compare_answer(const std::string& where, const api::Question& question, const api::Answer& got,
                    const api::Json& expected, const ValidateFlags& flags, Tally& tally) {
  if (expected.at("type").get<std::string>() != api::question_type_name(question.type)) {
    throw std::runtime_error(where + ": the reference answer's type is not the question's");
  }
  const std::vector<double> reference = reference_probabilities(expected, question);
  if (reference.size() != got.probabilities.size()) {
    throw std::runtime_error(where + ": " + std::to_string(reference.size()) + " reference probabilities for " +
                             std::to_string(got.probabilities.size()) + " labels");
  }
  for (std::size_t i = 0; i < reference.size(); ++i) {
    const double drift = std::abs(got.probabilities[i] - reference[i]);
    if (!(drift <= tally.max_prob_drift)) {
      tally.max_prob_drift = std::isnan(drift) ? std::numeric_limits<double>::infinity() : drift;
      tally.worst_question = where;
    }
  }
  if (question.type == api::QuestionType::score) {
    const double drift = std::abs(got.score - expected.at("score").get<double>());
    tally.max_score_drift = std::max(tally.max_score_drift, std::isnan(drift) ? std::numeric_limits<double>::infinity() : drift);
  }
  if (question.type == api::QuestionType::noul) return;
  const auto [margin, reference_best] = margin_and_argmax(reference);
  const std::size_t got_best = question.type == api::QuestionType::choice
                                   ? got.choice_index
                                   : margin_and_argmax(got.probabilities).second;
  if (got_best == reference_best) return;
  if (margin >= flags.decision_margin) {
    ++tally.decision_flips;
    std::fprintf(stderr, "flip: %s: label %zu instead of the reference's %zu (reference margin %.4f)\n", where.c_str(),
                 got_best, reference_best, margin);
  } else {
    ++tally.near_ties;
  }
}

api::DecisionRequest typed_request(const api::Json& body, const std::string& where) {
  api::RequestLimits limits;
  limits.has_default_model = true;
  limits.max_questions = std::numeric_limits<std::size_t>::max();
  limits.refuse_empty_noul = false;
  auto request = api::validate_system_one_request(body, limits);
  if (!request) {
    std::string detail = request.error().message;
    for (const api::ValidationIssue& issue : request.error().issues) detail += " " + issue.type + ": " + issue.message;
    throw std::runtime_error(where + ": the request is not a valid System One request:" + detail);
  }
  return std::move(request.value());
}

// The contract's prepare → run → finish, as the runtime drives it, without a token budget.
api::Result<std::vector<api::Answer>> answer_request(runtime::Engine& engine, const api::DecisionRequest& request) {
  runtime::PrepareLimits limits;
  limits.token_budget = std::numeric_limits<int64_t>::max();
  auto plan = engine.prepare(request, limits);
  if (!plan) return plan.error();
  auto raw = engine.run(*plan.value());
  if (!raw) return raw.error();
  return engine.finish(request, *plan.value(), std::move(raw.value()));
}

void validate_line(const std::string& where, const api::Json& line, runtime::Engine& engine,
                   const ValidateFlags& flags, Tally& tally) {
  if (!line.is_object() || !line.contains("request")) throw std::runtime_error(where + ": no \"request\" member");
  const api::Json& answers = line.contains("answers") ? line["answers"] : line.at("response").at("answers");
  const api::DecisionRequest request = typed_request(line["request"], where);
  ++tally.requests;
  auto got = answer_request(engine, request);
  if (!got) {
    ++tally.failed_requests;
    std::fprintf(stderr, "error: %s: %.*s: %s\n", where.c_str(),
                 static_cast<int>(api::error_type(got.error().code).size()), api::error_type(got.error().code).data(),
                 got.error().message.c_str());
    return;
  }
  for (std::size_t q = 0; q < request.questions.size(); ++q) {
    const std::string question_where = where + " " + request.questions[q].key;
    if (!answers.contains(request.questions[q].key)) {
      throw std::runtime_error(question_where + ": the reference has no answer for this question");
    }
    ++tally.questions;
    compare_answer(question_where, request.questions[q], got.value()[q], answers[request.questions[q].key], flags,
                   tally);
  }
}

int validate(const ValidateFlags& flags) {
  Tally tally;
  try {
    decide::LoadedModel model = decide::load_model(flags.model);
    std::ifstream in(flags.reference, std::ios::binary);
    if (!in) throw std::runtime_error(flags.reference + ": cannot be read");
    std::string text;
    for (std::size_t number = 1; std::getline(in, text); ++number) {
      if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
      const std::string where = flags.reference + ":" + std::to_string(number);
      auto parsed = api::parse_strict_json(text);
      if (const auto* error = std::get_if<api::JsonSyntaxError>(&parsed)) {
        throw std::runtime_error(where + ": " + error->message);
      }
      validate_line(where, std::get<api::Json>(parsed), *model.engine, flags, tally);
    }
    if (tally.requests == 0) throw std::runtime_error(flags.reference + ": no reference lines");
  } catch (const std::exception& error) {
    std::fprintf(stderr, "s1serve validate: %s\n", error.what());
    return 2;
  }
  const bool pass = tally.max_prob_drift <= flags.max_prob_drift && tally.max_score_drift <= flags.max_score_drift &&
                    tally.decision_flips == 0 && tally.failed_requests == 0;
  api::Json summary = api::Json::object();
  summary["requests"] = tally.requests;
  summary["questions"] = tally.questions;
  summary["failed_requests"] = tally.failed_requests;
  summary["max_prob_drift"] = tally.max_prob_drift;
  summary["max_prob_drift_at"] = tally.worst_question;
  summary["max_score_drift"] = tally.max_score_drift;
  summary["decision_flips"] = tally.decision_flips;
  summary["near_ties"] = tally.near_ties;
  summary["gates"] = {{"max_prob_drift", flags.max_prob_drift},
                      {"max_score_drift", flags.max_score_drift},
                      {"decision_margin", flags.decision_margin}};
  summary["pass"] = pass;
  std::string line;
  api::append_json(line, summary);
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
  return pass ? 0 : 1;
}

}  // namespace

void add_validate_command(CLI::App& app) {
  auto flags = std::make_shared<ValidateFlags>();
  CLI::App* command = app.add_subcommand(
      "validate", "Compare a model's answers with a reference outputs file (max probability drift, score drift, "
                  "decision flips) and exit 0 only within the gates");
  command->add_option("--model", flags->model, "Model directory (or name) as `serve --model` takes it")->required();
  command->add_option("--reference", flags->reference,
                      "JSONL: {\"request\": <System One request>, \"answers\": {<key>: <answer>}} per line")
      ->required();
  command->add_option("--max-prob-drift", flags->max_prob_drift, "Gate on max |Δp| over every label")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  command->add_option("--max-score-drift", flags->max_score_drift, "Gate on max |Δscore| over score questions")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  command->add_option("--decision-margin", flags->decision_margin,
                      "A different decision fails only where the reference's top-two margin is at least this")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  command->callback([flags] { std::exit(validate(*flags)); });
}

}  // namespace s1::cli
