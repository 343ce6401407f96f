#include "api/request.h"

namespace s1::api {

std::string_view question_type_name(QuestionType type) {
  switch (type) {
    case QuestionType::choice: return "choice";
    case QuestionType::noul: return "noul";
    case QuestionType::score: return "score";
  }
  return "noul";
}

size_t Question::label_count() const {
  switch (type) {
    case QuestionType::choice: return options.size();
    case QuestionType::score: return levels.size();
    case QuestionType::noul: return 2;
  }
  return 0;
}

namespace validation {

Location append(Location location, LocationPart part) {
  location.push_back(std::move(part));
  return location;
}

ValidationIssue json_invalid(std::string message) {
  return ValidationIssue{"json_invalid", {}, "Invalid JSON: " + std::move(message)};
}

void check_name(const std::string& name, const Location& location, std::vector<ValidationIssue>& issues) {
  const size_t characters = count_code_points(name);
  if (characters == 0) {
    issues.push_back({"string_too_short", location, "String should have at least 1 character"});
  } else if (characters > max_name_characters) {
    issues.push_back({"string_too_long", location, "String should have at most 256 characters"});
  } else if (has_control_character(name)) {
    issues.push_back({"string_pattern_mismatch", location, "String should not contain control characters"});
  }
}

std::optional<std::string> check_model(const Json* model, const Location& location, bool has_default,
                                       std::vector<ValidationIssue>& issues) {
  if (model == nullptr || model->is_null()) {
    if (!has_default) issues.push_back({"missing", location, "Field required"});
    return std::nullopt;
  }
  if (!model->is_string()) {
    issues.push_back({"string_type", location, "Input should be a valid string"});
    return std::nullopt;
  }
  const auto& name = model->get_ref<const std::string&>();
  const size_t before = issues.size();
  check_name(name, location, issues);
  if (issues.size() != before) return std::nullopt;
  return name;
}

}  // namespace validation

namespace {

using validation::append;

const Json* member(const Json& object, std::string_view name) {
  const auto found = object.find(name);
  return found == object.end() ? nullptr : &*found;
}

bool is_structured_text(const Json& value) {
  return value.is_string() || value.is_object() || value.is_array();
}

constexpr const char* text_value_message = "Input should be a valid string, object or array";

class SystemOneValidator {
 public:
  explicit SystemOneValidator(const RequestLimits& limits) : limits_(limits) {}

  Result<DecisionRequest> run(const Json& body) {
    if (!body.is_object()) {
      return ApiError::validation({{"dict_type", {}, "Input should be a valid dictionary"}});
    }
    DecisionRequest request;
    request.model = validation::check_model(member(body, "model"), {"model"}, limits_.has_default_model, issues_);
    check_state(member(body, "state"), request);
    check_questions(member(body, "questions"), request);
    check_thinking(member(body, "thinking"));
    if (!issues_.empty()) return ApiError::validation(std::move(issues_));
    auto media = collect_system_one_media(body);
    if (!media) return media.error();
    request.media = std::move(media->images);
    request.state = std::move(media->state);
    return request;
  }

 private:
  void issue(std::string type, Location location, std::string message) {
    issues_.push_back({std::move(type), std::move(location), std::move(message)});
  }

  void check_state(const Json* state, DecisionRequest& request) {
    const Location location{"state"};
    if (state == nullptr) return issue("missing", location, "Field required");
    if (!is_structured_text(*state)) return issue("value_type", location, text_value_message);
    if (state->is_string() && state->get_ref<const std::string&>().empty()) {
      return issue("string_too_short", location, "String should have at least 1 character");
    }
    if (!state->is_string() && state->empty()) {
      return issue("too_short", location, "Value should have at least 1 item after validation, not 0");
    }
    request.state = *state;
  }

  void check_questions(const Json* questions, DecisionRequest& request) {
    const Location location{"questions"};
    if (questions == nullptr) return issue("missing", location, "Field required");
    if (!questions->is_object()) return issue("dict_type", location, "Input should be a valid dictionary");
    if (questions->empty()) {
      return issue("too_short", location, "Dictionary should have at least 1 item after validation, not 0");
    }
    if (questions->size() > limits_.max_questions) {
      issue("too_long", location,
            "Dictionary should have at most " + std::to_string(limits_.max_questions) + " items");
    }
    request.questions.reserve(questions->size());
    for (const auto& [key, value] : questions->items()) {
      const Location question_location = append(location, key);
      validation::check_name(key, question_location, issues_);
      check_question(key, value, question_location, request);
    }
  }

  void check_question(const std::string& key, const Json& value, const Location& location,
                      DecisionRequest& request) {
    if (!value.is_object()) return issue("dict_type", location, "Input should be a valid dictionary");
    Question question;
    question.key = key;

    const Json* type = member(value, "type");
    bool type_known = false;
    if (type == nullptr) {
      issue("missing", append(location, "type"), "Field required");
    } else if (type->is_string() && *type == "choice") {
      question.type = QuestionType::choice;
      type_known = true;
    } else if (type->is_string() && *type == "noul") {
      question.type = QuestionType::noul;
      type_known = true;
    } else if (type->is_string() && *type == "score") {
      question.type = QuestionType::score;
      type_known = true;
    } else {
      issue("union_tag_invalid", append(location, "type"),
            "Input tag does not match any of the expected tags: 'choice', 'noul', 'score'");
    }
    // Without a known type the question's shape is undefined, as in a tagged union.
    if (!type_known) return;
    const size_t issues_before = issues_.size();

    if (const Json* instructions = member(value, "instructions")) {
      if (instructions->is_null() || is_structured_text(*instructions)) {
        question.instructions = *instructions;
      } else {
        issue("value_type", append(location, "instructions"), text_value_message);
      }
    }

    const Json* criteria = member(value, "criteria");
    const Location criteria_location = append(location, "criteria");
    switch (question.type) {
      case QuestionType::choice: check_choice_criteria(criteria, criteria_location, question); break;
      case QuestionType::score: check_score_criteria(criteria, criteria_location, question); break;
      case QuestionType::noul: check_noul_criteria(criteria, criteria_location, question); break;
    }

    for (const auto& [name, unused] : value.items()) {
      if (name != "type" && name != "instructions" && name != "criteria") {
        issue("extra_forbidden", append(location, name), "Extra inputs are not permitted");
      }
    }
    // TypeSafe and its SDK refuse a noul that says nothing to decide (contract §11.1); a question
    // already refused for another reason is not refused twice.
    if (limits_.refuse_empty_noul && question.type == QuestionType::noul && issues_.size() == issues_before &&
        question.instructions.is_null() &&
        question.noul_true.is_null() && question.noul_false.is_null()) {
      issue("missing", append(location, "instructions"), "Field required");
    }
    request.questions.push_back(std::move(question));
  }

  void check_choice_criteria(const Json* criteria, const Location& location, Question& question) {
    if (criteria == nullptr) return issue("missing", location, "Field required");
    if (!criteria->is_object()) return issue("dict_type", location, "Input should be a valid dictionary");
    if (criteria->empty()) {
      return issue("too_short", location, "Dictionary should have at least 1 item after validation, not 0");
    }
    if (criteria->size() > max_choice_options) {
      return issue("too_long", location, "Dictionary should have at most 255 items");
    }
    question.options.reserve(criteria->size());
    for (const auto& [name, description] : criteria->items()) {
      const Location option_location = append(location, name);
      const size_t before = issues_.size();
      validation::check_name(name, option_location, issues_);
      if (issues_.size() == before && !description.is_null() && !is_structured_text(description)) {
        issue("value_type", option_location, text_value_message);
      }
      question.options.push_back(ChoiceOption{name, description});
    }
  }

  void check_score_criteria(const Json* criteria, const Location& location, Question& question) {
    if (criteria == nullptr) return issue("missing", location, "Field required");
    if (!criteria->is_array()) return issue("list_type", location, "Input should be a valid list");
    if (criteria->size() < min_score_levels) {
      return issue("too_short", location, "List should have at least 2 items after validation");
    }
    if (criteria->size() > max_score_levels) {
      return issue("too_long", location, "List should have at most 10 items");
    }
    int64_t index = 0;
    for (const Json& level : *criteria) {
      const Location level_location = append(location, index++);
      if (!is_structured_text(level)) {
        issue("value_type", level_location, text_value_message);
      } else if (level.is_string() && level.get_ref<const std::string&>().empty()) {
        issue("string_too_short", level_location, "String should have at least 1 character");
      }
      question.levels.push_back(level);
    }
  }

  void check_noul_criteria(const Json* criteria, const Location& location, Question& question) {
    if (criteria == nullptr || criteria->is_null()) return;
    if (!criteria->is_object()) return issue("dict_type", location, "Input should be a valid dictionary");
    for (const auto& [name, text] : criteria->items()) {
      const Location side_location = append(location, name);
      if (name != "true" && name != "false") {
        issue("extra_forbidden", side_location, "Extra inputs are not permitted");
        continue;
      }
      // TypeSafe's schema allows null for an undescribed side (jev-lite always sends it).
      if (text.is_null()) continue;
      if (!is_structured_text(text)) {
        issue("value_type", side_location, text_value_message);
        continue;
      }
      (name == "true" ? question.noul_true : question.noul_false) = text;
    }
  }

  void check_thinking(const Json* thinking) {
    if (thinking == nullptr || thinking->is_null()) return;
    if (thinking->is_boolean() && !thinking->get<bool>()) return;
    if (thinking->is_object() && thinking->size() == 1) {
      const Json* enabled = member(*thinking, "enabled");
      if (enabled != nullptr && enabled->is_boolean() && !enabled->get<bool>()) return;
    }
    issue("literal_error", {"thinking"}, "Input should be false or {\"enabled\": false}");
  }

  const RequestLimits& limits_;
  std::vector<ValidationIssue> issues_;
};

}  // namespace

Result<DecisionRequest> parse_system_one_request(std::string_view body, const RequestLimits& limits) {
  return validation::parse_then_validate(body, limits, &validate_system_one_request);
}

Result<DecisionRequest> validate_system_one_request(const Json& body, const RequestLimits& limits) {
  return SystemOneValidator(limits).run(body);
}

}  // namespace s1::api
