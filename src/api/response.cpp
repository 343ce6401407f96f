#include "api/response.h"

namespace s1::api {

std::string serialize_system_one_response(const DecisionRequest& request, const DecisionResult& result) {
  std::string out;
  out.reserve(256 + 64 * request.questions.size());
  out += "{\"model\":";
  append_json_string(out, result.model);
  out += ",\"answers\":{";
  for (size_t q = 0; q < request.questions.size(); ++q) {
    const Question& question = request.questions[q];
    const Answer& answer = result.answers[q];
    if (q > 0) out += ',';
    append_json_string(out, question.key);
    out += ":{\"type\":\"";
    out += question_type_name(question.type);
    out += '"';
    switch (question.type) {
      case QuestionType::noul:
        out += ",\"noul\":";
        append_json_double(out, answer.probabilities[0]);
        break;
      case QuestionType::choice:
        out += ",\"choice\":";
        append_json_string(out, question.options[answer.choice_index].name);
        out += ",\"confidence\":";
        append_json_double(out, answer.confidence);
        out += ",\"probabilities\":{";
        for (size_t i = 0; i < question.options.size(); ++i) {
          if (i > 0) out += ',';
          append_json_string(out, question.options[i].name);
          out += ':';
          append_json_double(out, answer.probabilities[i]);
        }
        out += '}';
        break;
      case QuestionType::score:
        out += ",\"score\":";
        append_json_double(out, answer.score);
        out += ",\"confidence\":";
        append_json_double(out, answer.confidence);
        out += ",\"legend\":{";
        for (size_t i = 0; i < question.levels.size(); ++i) {
          if (i > 0) out += ',';
          out += '"' + std::to_string(i) + "\":";
          append_json(out, question.levels[i]);
        }
        out += "},\"probabilities\":{";
        for (size_t i = 0; i < question.levels.size(); ++i) {
          if (i > 0) out += ',';
          out += '"' + std::to_string(i) + "\":";
          append_json_double(out, answer.probabilities[i]);
        }
        out += '}';
        break;
    }
    out += '}';
  }
  out += "},\"usage\":{\"input_tokens\":";
  out += std::to_string(result.input_tokens);
  out += ",\"output_tokens\":0";
  // Only when a cached prefix was reused (contract §11), so that other answers keep their bytes.
  if (result.cached_tokens > 0) out += ",\"cached_tokens\":" + std::to_string(result.cached_tokens);
  out += "}}";
  return out;
}

}  // namespace s1::api
