#pragma once
// Running a request through a contract's engine as the server does, for the contract unit tests.

#include <cstdint>
#include <vector>

#include "api/json.h"
#include "api/request.h"
#include "api/response.h"
#include "runtime/engine.h"

namespace s1::test {

struct EngineRun {
  int64_t input_tokens = 0;
  std::vector<api::Answer> answers;
};

// prepare → run → finish; throws std::runtime_error naming the step that failed and its message.
EngineRun run_engine(runtime::Engine& engine, const api::DecisionRequest& request,
                     const runtime::PrepareLimits& limits = {});

// The error code prepare refuses `body` with (validated as the server would first);
// api::ErrorCode::internal_error where it accepts the request, a code no contract refuses with.
api::ErrorCode prepare_refusal(const runtime::Engine& engine, const api::Json& body,
                               const runtime::PrepareLimits& limits = {});

// Expects prepare to refuse, with unsupported_question_type, a noul question beside a choice one and a
// score question: for the contracts that answer choice questions only.
void expect_refuses_all_but_choice(const runtime::Engine& engine);

}  // namespace s1::test
