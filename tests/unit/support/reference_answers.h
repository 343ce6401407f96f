#pragma once
// Comparing a contract's answers with the reference answers the tools/reference scripts write.

#include <cstddef>
#include <filesystem>
#include <vector>

#include "api/json.h"
#include "api/request.h"
#include "api/response.h"
#include "runtime/engine.h"

namespace s1::test {

// EXPECTs each answer against `expected` (the reference's answers by question key): noul's P(yes);
// otherwise the chosen option's name or the score, the confidence and every probability in option
// order; numbers within `tolerance`.
void expect_answers_match(const api::DecisionRequest& request, const std::vector<api::Answer>& answers,
                          const api::Json& expected, double tolerance);

// Every line ({"request", "input_tokens", "answers"}) of a reference's expected-answers JSONL through
// `engine` as the server runs it: input tokens exact, answers by expect_answers_match. Returns the
// number of questions compared, for the caller to check that the fixture was not empty.
std::size_t expect_reference_answers(runtime::Engine& engine, const std::filesystem::path& expected_jsonl,
                                     double tolerance);

}  // namespace s1::test
