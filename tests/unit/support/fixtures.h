#pragma once
// Helpers the decision-contract unit tests share, so each test reads its committed fixtures the same way.

#include <filesystem>
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
// A choice question keyed "q".
api::Question choice(std::vector<api::ChoiceOption> options, api::Json instructions = nullptr);

}  // namespace s1::test
