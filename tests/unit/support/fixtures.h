#pragma once
// Helpers the decision-contract unit tests share, so each test reads its committed fixtures the same way.

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "api/json.h"
#include "api/request.h"

namespace s1::test {

// tests/fixtures/<name> under S1SERVE_SOURCE_DIR (set by ctest), else under the working directory.
std::filesystem::path fixture_dir(std::string_view name);

api::Json read_json(const std::filesystem::path& path);
// One JSON value per non-empty line.
std::vector<api::Json> read_jsonl(const std::filesystem::path& path);

// The limits a server with a default model applies.
api::RequestLimits default_model_limits();
// A fixture's request body, validated as the server would; throws when the fixture is not a valid request.
api::DecisionRequest typed_request(const api::Json& body, const api::RequestLimits& limits = default_model_limits());
// The one question of {"state":"s","questions":{"q": <question_json>}}.
api::Question single_question(std::string_view question_json);
// The question with `key`; throws when there is none.
const api::Question& question_named(const api::DecisionRequest& request, const std::string& key);
// Calls check for each line of <dir>/prompts.jsonl with the request of <dir>/requests.jsonl it names
// ("request", an index) and that request's question it names ("question", a key); returns the number of lines.
std::size_t for_each_prompt_golden(
    const std::filesystem::path& dir,
    const std::function<void(const api::Json& golden, const api::DecisionRequest& request,
                             const api::Question& question)>& check);
// A choice question keyed "q".
api::Question choice(std::vector<api::ChoiceOption> options, api::Json instructions = nullptr);

}  // namespace s1::test
