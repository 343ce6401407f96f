#pragma once
// The typed System One request (contract §2) and its validation.

#include "api/errors.h"
#include "api/json.h"
#include "api/media.h"

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace s1::api {

enum class QuestionType { choice, noul, score };

std::string_view question_type_name(QuestionType type);

struct ChoiceOption {
  std::string name;
  Json description;  // null when the option has none
};

struct Question {
  std::string key;  // never shown to a model
  QuestionType type = QuestionType::noul;
  Json instructions;                  // null when none
  std::vector<ChoiceOption> options;  // choice
  std::vector<Json> levels;           // score, lowest first
  Json noul_true;                     // noul, null when not given
  Json noul_false;                    // noul, null when not given

  // Options, levels, or 2 for noul (true, false).
  size_t label_count() const;
};

struct DecisionRequest {
  std::optional<std::string> model;  // absent or null: the default model
  Json state;
  std::vector<Question> questions;
  std::vector<EncodedImage> media;   // as sent, its form checked; decoded once the model is known
  std::vector<RequestImage> images;  // decoded, in media's order: what a contract reads
};

struct RequestLimits {
  size_t max_questions = 400;  // OpenAI Decisions' limit (contract §11.1)
  bool has_default_model = false;
  // §11.1's wire rule. Reference files recorded under contract v1, whose models answered such
  // questions, replay with it off (`s1serve validate`, fixture tests).
  bool refuse_empty_noul = true;
};

inline constexpr size_t max_name_characters = 256;
inline constexpr size_t max_choice_options = 255;
inline constexpr size_t min_score_levels = 2;
inline constexpr size_t max_score_levels = 10;

// Steps 5–7 of the check order: strict JSON (422), schema with every problem listed (422), then
// media (400).
Result<DecisionRequest> parse_system_one_request(std::string_view body, const RequestLimits& limits);
// Steps 6–7 on an already strictly parsed body.
Result<DecisionRequest> validate_system_one_request(const Json& body, const RequestLimits& limits);

// Shared by both routes' validators.
namespace validation {
ValidationIssue json_invalid(std::string message);
// Checks a model/question/option name; appends at most one issue.
void check_name(const std::string& name, const Location& location, std::vector<ValidationIssue>& issues);
// Checks a `model` member (absent or null allowed); returns the name when it is a valid string.
std::optional<std::string> check_model(const Json* model, const Location& location, bool has_default,
                                       std::vector<ValidationIssue>& issues);
Location append(Location location, LocationPart part);

// Both routes' parse: strict JSON first (a syntax error is its one issue), then the route's validator.
template <typename Request>
Result<Request> parse_then_validate(std::string_view body, const RequestLimits& limits,
                                    Result<Request> (*validate)(const Json&, const RequestLimits&)) {
  auto parsed = parse_strict_json(body);
  if (const auto* error = std::get_if<JsonSyntaxError>(&parsed)) {
    return ApiError::validation({json_invalid(error->message)});
  }
  return validate(std::get<Json>(parsed), limits);
}
}  // namespace validation

}  // namespace s1::api
