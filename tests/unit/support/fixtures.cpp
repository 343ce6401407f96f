#include "support/fixtures.h"

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <utility>

namespace s1::test {

std::filesystem::path fixture_dir(std::string_view name) {
  const char* source = std::getenv("S1SERVE_SOURCE_DIR");
  return std::filesystem::path(source != nullptr ? source : ".") / "tests" / "fixtures" / name;
}

api::Json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  return api::Json::parse(in);
}

std::vector<api::Json> read_jsonl(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<api::Json> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(api::Json::parse(line));
  }
  return lines;
}

api::RequestLimits default_model_limits() {
  api::RequestLimits limits;
  limits.has_default_model = true;
  limits.refuse_empty_noul = false;  // contracts' own rules for such questions stay testable
  return limits;
}

api::DecisionRequest typed_request(const api::Json& body, const api::RequestLimits& limits) {
  auto request = api::validate_system_one_request(body, limits);
  if (!request) throw std::runtime_error("fixture request rejected: " + request.error().message);
  return request.value();
}

api::Question single_question(std::string_view question_json) {
  return typed_request(api::Json::parse(std::string(R"({"state":"s","questions":{"q":)") + std::string(question_json) + "}}"))
      .questions.front();
}

const api::Question& question_named(const api::DecisionRequest& request, const std::string& key) {
  for (const api::Question& question : request.questions) {
    if (question.key == key) return question;
  }
  throw std::runtime_error("no question " + key);
}

std::size_t for_each_prompt_golden(
    const std::filesystem::path& dir,
    const std::function<void(const api::Json& golden, const api::DecisionRequest& request,
                             const api::Question& question)>& check) {
  const std::vector<api::Json> requests = read_jsonl(dir / "requests.jsonl");
  const std::vector<api::Json> goldens = read_jsonl(dir / "prompts.jsonl");
  for (const api::Json& golden : goldens) {
    const api::DecisionRequest request = typed_request(requests.at(golden["request"].get<std::size_t>()));
    check(golden, request, question_named(request, golden["question"].get<std::string>()));
  }
  return goldens.size();
}

api::Question choice(std::vector<api::ChoiceOption> options, api::Json instructions) {
  api::Question question;
  question.type = api::QuestionType::choice;
  question.key = "q";
  question.instructions = std::move(instructions);
  question.options = std::move(options);
  return question;
}

}  // namespace s1::test
