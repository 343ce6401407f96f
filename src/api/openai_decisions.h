#pragma once
// POST /v1/decisions: the OpenAI Decisions shape (contract §6), validated here and mapped onto the
// same typed DecisionRequest that /v1/systemone produces, so both routes share one pipeline.

#include "api/request.h"
#include "api/response.h"

#include <optional>
#include <string>
#include <vector>

namespace s1::api {

enum class DecisionsQuestionType { predicate, choice, score };

struct DecisionsQuestion {
  DecisionsQuestionType type = DecisionsQuestionType::predicate;
  std::optional<std::string> name;
  std::vector<Json> choice_values;        // as sent: strings or booleans
  std::vector<std::string> level_labels;  // score
};

struct DecisionsRequest {
  DecisionRequest pipeline;  // keyed by position; neither keys nor names reach a model
  std::vector<DecisionsQuestion> questions;
};

Result<DecisionsRequest> parse_decisions_request(std::string_view body, const RequestLimits& limits);
Result<DecisionsRequest> validate_decisions_request(const Json& body, const RequestLimits& limits);

// The System One body a worker understands (router §7.3): state, questions keyed "0", "1", …
Json decisions_to_system_one_body(const DecisionsRequest& request);

std::string serialize_decisions_response(const DecisionsRequest& request, const DecisionResult& result);

}  // namespace s1::api
