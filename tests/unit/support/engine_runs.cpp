#include "support/engine_runs.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <utility>

#include "support/fixtures.h"

namespace s1::test {

EngineRun run_engine(runtime::Engine& engine, const api::DecisionRequest& request,
                     const runtime::PrepareLimits& limits) {
  auto plan = engine.prepare(request, limits);
  if (!plan) throw std::runtime_error("prepare: " + plan.error().message);
  auto raw = engine.run(*plan.value());
  if (!raw) throw std::runtime_error("run: " + raw.error().message);
  auto answers = engine.finish(request, *plan.value(), std::move(raw.value()));
  if (!answers) throw std::runtime_error("finish: " + answers.error().message);
  return {plan.value()->input_tokens, std::move(answers.value())};
}

api::ErrorCode prepare_refusal(const runtime::Engine& engine, const api::Json& body,
                               const runtime::PrepareLimits& limits) {
  auto plan = engine.prepare(typed_request(body), limits);
  return plan ? api::ErrorCode::internal_error : plan.error().code;
}

void expect_refuses_all_but_choice(const runtime::Engine& engine) {
  const auto refused = [&](const char* body) { return prepare_refusal(engine, api::Json::parse(body)); };
  EXPECT_EQ(refused(R"({"state":"s","questions":{"a":{"type":"choice","criteria":{"x":null}},"b":{"type":"noul"}}})"),
            api::ErrorCode::unsupported_question_type);
  EXPECT_EQ(refused(R"({"state":"s","questions":{"a":{"type":"score","criteria":["lo","hi"]}}})"),
            api::ErrorCode::unsupported_question_type);
}

}  // namespace s1::test
