#include "router/decisions_relay.h"

#include "api/json.h"

namespace s1::router {
namespace {

api::ApiError bad_reply() {
  return api::ApiError::make(api::ErrorCode::upstream_bad_response, "The worker's answer does not match the request");
}

const api::Json* member(const api::Json& object, std::string_view name) {
  if (!object.is_object()) return nullptr;
  const auto found = object.find(name);
  return found == object.end() ? nullptr : &*found;
}

bool is_probability(const api::Json* value) {
  return value != nullptr && value->is_number() && value->get<double>() >= 0.0 && value->get<double>() <= 1.0;
}

}  // namespace

api::Result<api::DecisionResult> decisions_result_from_worker(const api::DecisionsRequest& request,
                                                              const std::string& body, const std::string& model) {
  const auto parsed = api::parse_strict_json(body);
  const auto* root = std::get_if<api::Json>(&parsed);
  if (root == nullptr) return bad_reply();
  const api::Json* answers = member(*root, "answers");
  const api::Json* usage = member(*root, "usage");
  if (answers == nullptr || !answers->is_object() || answers->size() != request.pipeline.questions.size()) {
    return bad_reply();
  }
  api::DecisionResult result;
  result.model = model;
  const api::Json* tokens = usage != nullptr ? member(*usage, "input_tokens") : nullptr;
  result.input_tokens = tokens != nullptr && tokens->is_number_integer() ? tokens->get<int64_t>() : 0;
  for (const api::Question& question : request.pipeline.questions) {
    const api::Json* answer = member(*answers, question.key);
    if (answer == nullptr) return bad_reply();
    api::Answer typed;
    typed.type = question.type;
    switch (question.type) {
      case api::QuestionType::noul: {
        const api::Json* p = member(*answer, "noul");
        if (!is_probability(p)) return bad_reply();
        typed.probabilities = {p->get<double>(), 1.0 - p->get<double>()};
        break;
      }
      case api::QuestionType::choice: {
        const api::Json* probabilities = member(*answer, "probabilities");
        const api::Json* choice = member(*answer, "choice");
        const api::Json* confidence = member(*answer, "confidence");
        if (!is_probability(confidence) || choice == nullptr || !choice->is_string()) return bad_reply();
        bool chosen = false;
        for (size_t i = 0; i < question.options.size(); ++i) {
          const api::Json* p = probabilities != nullptr ? member(*probabilities, question.options[i].name) : nullptr;
          if (!is_probability(p)) return bad_reply();
          typed.probabilities.push_back(p->get<double>());
          if (*choice == question.options[i].name) {
            typed.choice_index = i;
            chosen = true;
          }
        }
        if (!chosen || probabilities->size() != question.options.size()) return bad_reply();
        typed.confidence = confidence->get<double>();
        break;
      }
      case api::QuestionType::score: {
        const api::Json* probabilities = member(*answer, "probabilities");
        const api::Json* score = member(*answer, "score");
        const api::Json* confidence = member(*answer, "confidence");
        if (!is_probability(confidence) || score == nullptr || !score->is_number()) return bad_reply();
        for (size_t i = 0; i < question.levels.size(); ++i) {
          const api::Json* p = probabilities != nullptr ? member(*probabilities, std::to_string(i)) : nullptr;
          if (!is_probability(p)) return bad_reply();
          typed.probabilities.push_back(p->get<double>());
        }
        if (probabilities->size() != question.levels.size()) return bad_reply();
        typed.score = score->get<double>();
        typed.confidence = confidence->get<double>();
        break;
      }
    }
    result.answers.push_back(std::move(typed));
  }
  return result;
}

std::string openai_error_from_worker(int status, const std::string& body) {
  std::string message = "The worker refused the request";
  std::string code = "upstream_error";
  const auto parsed = api::parse_strict_json(body);
  if (const auto* root = std::get_if<api::Json>(&parsed)) {
    const api::Json* detail = member(*root, "detail");
    if (detail != nullptr && detail->is_object()) {
      if (const api::Json* text = member(*detail, "message"); text != nullptr && text->is_string()) message = text->get<std::string>();
      if (const api::Json* type = member(*detail, "error_type"); type != nullptr && type->is_string()) code = type->get<std::string>();
    } else if (detail != nullptr && detail->is_array() && !detail->empty()) {
      const api::Json& first = detail->front();
      if (const api::Json* text = member(first, "msg"); text != nullptr && text->is_string()) message = text->get<std::string>();
      if (const api::Json* type = member(first, "type"); type != nullptr && type->is_string()) code = type->get<std::string>();
    }
  }
  const std::string_view type = status == 401 || status == 403 ? "authentication_error"
                                : status >= 500               ? "server_error"
                                                              : "invalid_request_error";
  std::string out = "{\"error\":{\"message\":";
  api::append_json_string(out, message);
  out += ",\"type\":";
  api::append_json_string(out, type);
  out += ",\"param\":null,\"code\":";
  api::append_json_string(out, code);
  out += "}}";
  return out;
}

}  // namespace s1::router
