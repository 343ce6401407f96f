#pragma once
// /v1/decisions for an upstream model (§7.3): the worker speaks System One; its answers are mapped
// back into the OpenAI shape and its errors re-wrapped in the OpenAI envelope.

#include "api/openai_decisions.h"
#include "router/upstream_pool.h"

#include <string>

namespace s1::router {

// A worker's 200 body → the typed result; 502 upstream_bad_response when it does not answer exactly
// the generated question keys with the expected shapes.
api::Result<api::DecisionResult> decisions_result_from_worker(const api::DecisionsRequest& request,
                                                              const std::string& body, const std::string& model);

// A worker's error body → the OpenAI envelope: message from detail.message or detail[0].msg, code from
// error_type or detail[0].type (else upstream_error), param null.
std::string openai_error_from_worker(int status, const std::string& body);

}  // namespace s1::router
