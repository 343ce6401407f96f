// Request bodies from the network: strict JSON, both routes' validators, prompt rendering and the
// response writers must never crash, hang or read out of bounds, whatever the bytes.
#include "api/openai_decisions.h"
#include "api/request.h"
#include "api/response.h"
#include "decide/prompt.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace {

s1::api::DecisionResult uniform_answers(const s1::api::DecisionRequest& request) {
  s1::api::DecisionResult result;
  result.model = "fuzz";
  result.input_tokens = 1;
  for (const auto& question : request.questions) {
    s1::api::Answer answer;
    answer.type = question.type;
    answer.probabilities.assign(question.label_count(), 1.0 / static_cast<double>(question.label_count()));
    result.answers.push_back(answer);
  }
  return result;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  for (const bool has_default : {false, true}) {
    const s1::api::RequestLimits limits{64, has_default};
    auto request = s1::api::parse_system_one_request(body, limits);
    if (request.ok()) {
      s1::decide::default_state_prefix(request->state);
      for (const auto& question : request->questions) s1::decide::default_question_block(question);
      s1::api::serialize_system_one_response(request.value(), uniform_answers(request.value()));
    } else {
      s1::api::system_one_error_body(request.error());
      s1::api::openai_error_body(request.error());
    }
    auto decisions = s1::api::parse_decisions_request(body, limits);
    if (decisions.ok()) {
      s1::api::serialize_decisions_response(decisions.value(), uniform_answers(decisions->pipeline));
      s1::api::decisions_to_system_one_body(decisions.value());
    }
  }
  return 0;
}
