#include "api/openai_decisions.h"

#include <algorithm>
#include <set>

namespace s1::api {
namespace {

using validation::append;

const Json* member(const Json& object, std::string_view name) {
  const auto found = object.find(name);
  return found == object.end() ? nullptr : &*found;
}

struct RenderedMessage {
  std::string role;
  std::string text;  // its parts' texts joined with "\n\n"
};

// Which part types a list may hold, after openai's decision_create_params: user content takes text,
// JSON and media; system and developer content text and JSON; assistant content output text and
// refusals; question instructions text, JSON and images.
enum class PartKinds { user_content, instruction_content, assistant_content, question_instructions };

class DecisionsValidator {
 public:
  explicit DecisionsValidator(const RequestLimits& limits) : limits_(limits) {}

  Result<DecisionsRequest> run(const Json& body) {
    if (!body.is_object()) return ApiError::validation({{"dict_type", {}, "Input should be a valid dictionary"}});
    DecisionsRequest result;
    result.pipeline.model =
        validation::check_model(member(body, "model"), {"model"}, limits_.has_default_model, issues_);
    check_input(member(body, "input"), result.pipeline);
    check_questions(member(body, "questions"), result);
    if (!issues_.empty()) return ApiError::validation(std::move(issues_));
    if (refusal_) return std::move(*refusal_);
    result.pipeline.media = std::move(media_);
    return result;
  }

 private:
  void issue(std::string type, Location location, std::string message) {
    issues_.push_back({std::move(type), std::move(location), std::move(message)});
  }

  // A required array of min..max entries; false when its entries cannot be checked.
  bool check_list(const Json* list, const Location& location, size_t minimum, size_t maximum) {
    if (list == nullptr) {
      issue("missing", location, "Field required");
    } else if (!list->is_array()) {
      issue("list_type", location, "Input should be a valid list");
    } else if (list->size() < minimum) {
      issue("too_short", location, "List should have at least " + std::to_string(minimum) + " items after validation");
    } else if (list->size() > maximum) {
      issue("too_long", location, "List should have at most " + std::to_string(maximum) + " items");
    } else {
      return true;
    }
    return false;
  }

  void forbid_extra_members(const Json& object, const Location& location,
                            std::initializer_list<std::string_view> allowed) {
    for (const auto& [name, unused] : object.items()) {
      bool known = false;
      for (const std::string_view candidate : allowed) known = known || name == candidate;
      if (!known) issue("extra_forbidden", append(location, name), "Extra inputs are not permitted");
    }
  }

  void check_input(const Json* input, DecisionRequest& pipeline) {
    const Location location{"input"};
    if (input == nullptr) return issue("missing", location, "Field required");
    if (input->is_string()) {
      if (input->get_ref<const std::string&>().empty()) {
        return issue("string_too_short", location, "String should have at least 1 character");
      }
      pipeline.state = *input;
      return;
    }
    if (!input->is_array()) return issue("value_type", location, "Input should be a valid string or list");
    if (input->empty()) return issue("too_short", location, "List should have at least 1 item after validation, not 0");
    std::vector<RenderedMessage> messages;
    int64_t index = 0;
    for (const Json& item : *input) check_item(item, append(location, index++), messages);
    pipeline.state = render_state(messages);
  }

  // §11.2: user text alone reads as before; once another role speaks, the model sees who said what.
  static Json render_state(const std::vector<RenderedMessage>& messages) {
    const bool only_user = std::all_of(messages.begin(), messages.end(),
                                       [](const RenderedMessage& message) { return message.role == "user"; });
    if (only_user) {
      std::string joined;
      for (const RenderedMessage& message : messages) join_text(joined, message.text);
      return joined;
    }
    Json rendered = Json::array();
    for (const RenderedMessage& message : messages) {
      rendered.push_back(Json::object({{"role", message.role}, {"content", message.text}}));
    }
    return rendered;
  }

  static void join_text(std::string& joined, const std::string& text) {
    if (!joined.empty()) joined += "\n\n";
    joined += text;
  }

  // The first input s1serve cannot use, answered with a 400 once the schema is valid.
  void refuse_once(ErrorCode code, const Location& location, std::string message) {
    if (refusal_) return;
    refusal_ = ApiError::make(code, std::move(message));
    refusal_->openai_param = openai_param(location);
  }

  void check_item(const Json& item, const Location& location, std::vector<RenderedMessage>& messages) {
    if (!item.is_object()) return issue("dict_type", location, "Input should be a valid dictionary");
    const Json* type = member(item, "type");
    if (type != nullptr && type->is_string() &&
        (*type == "function_call" || *type == "function_call_output" || *type == "custom_tool_call" ||
         *type == "custom_tool_call_output")) {
      return refuse_once(ErrorCode::unsupported_input, location,
                         openai_param(location) + ": " + type->get<std::string>() +
                             " items are not supported; send the call and its output as message text");
    }
    if (type != nullptr && !(type->is_string() && *type == "message")) {
      issue("literal_error", append(location, "type"), "Input should be 'message'");
    }
    const Json* role = member(item, "role");
    std::string role_name;
    if (role == nullptr) {
      issue("missing", append(location, "role"), "Field required");
    } else if (role->is_string() && (*role == "user" || *role == "system" || *role == "developer" ||
                                     *role == "assistant")) {
      role_name = role->get<std::string>();
    } else {
      issue("literal_error", append(location, "role"),
            "Input should be 'user', 'system', 'developer' or 'assistant'");
    }
    const bool assistant = role_name == "assistant";
    if (const Json* phase = member(item, "phase"); phase != nullptr && assistant && !phase->is_null() &&
                                                   !(phase->is_string() && (*phase == "commentary" ||
                                                                            *phase == "final_answer"))) {
      issue("literal_error", append(location, "phase"), "Input should be 'commentary' or 'final_answer'");
    }
    RenderedMessage rendered{role_name, ""};
    const Json* content = member(item, "content");
    const Location content_location = append(location, "content");
    if (content == nullptr) {
      issue("missing", content_location, "Field required");
    } else if (content->is_string()) {
      if (content->get_ref<const std::string&>().empty()) {
        issue("string_too_short", content_location, "String should have at least 1 character");
      } else {
        rendered.text = content->get<std::string>();
      }
    } else if (!content->is_array()) {
      issue("value_type", content_location, "Input should be a valid string or list");
    } else if (content->empty()) {
      issue("too_short", content_location, "List should have at least 1 item after validation, not 0");
    } else {
      const PartKinds kinds = assistant ? PartKinds::assistant_content
                              : role_name == "user" ? PartKinds::user_content
                                                    : PartKinds::instruction_content;
      int64_t index = 0;
      for (const Json& part : *content) {
        if (auto text = check_part(part, append(content_location, index++), kinds)) join_text(rendered.text, *text);
      }
    }
    if (assistant) {
      forbid_extra_members(item, location, {"role", "type", "content", "phase"});
    } else {
      forbid_extra_members(item, location, {"role", "type", "content"});
    }
    messages.push_back(std::move(rendered));
  }

  // A part's text: input_text and output_text as sent, input_json as compact JSON, a refusal's text.
  std::optional<std::string> check_part(const Json& part, const Location& location, PartKinds kinds) {
    if (!part.is_object()) {
      issue("dict_type", location, "Input should be a valid dictionary");
      return std::nullopt;
    }
    const Json* type = member(part, "type");
    if (type == nullptr) {
      issue("missing", append(location, "type"), "Field required");
      return std::nullopt;
    }
    const std::string tag = type->is_string() ? type->get<std::string>() : std::string();
    const bool assistant = kinds == PartKinds::assistant_content;
    const bool image = tag == "input_image" &&
                       (kinds == PartKinds::user_content || kinds == PartKinds::question_instructions);
    if (image) {
      auto encoded = decisions_input_image(part, location);
      if (encoded) {
        media_.push_back(std::move(encoded.value()));
      } else if (!refusal_) {
        refusal_ = std::move(encoded.error());
        refusal_->openai_param = openai_param(location);
      }
      return std::nullopt;
    }
    if (kinds == PartKinds::user_content && (tag == "input_file" || tag == "input_audio")) {
      refuse_once(ErrorCode::unsupported_media, location, "Files and audio are not supported; send images");
      return std::nullopt;
    }
    if (!assistant && tag == "input_text") return check_text_part(part, location, "text", true);
    if (assistant && (tag == "output_text" || tag == "refusal")) {
      return check_text_part(part, location, tag == "refusal" ? "refusal" : "text", false);
    }
    if (!assistant && tag == "input_json") {
      const Json* data = member(part, "data");
      forbid_extra_members(part, location, {"type", "data"});
      if (data == nullptr) {
        issue("missing", append(location, "data"), "Field required");
      } else if (!data->is_object() && !data->is_array()) {
        issue("value_type", append(location, "data"), "Input should be a valid dictionary or list");
      } else {
        std::string text;
        append_json(text, *data);
        return text;
      }
      return std::nullopt;
    }
    issue("union_tag_invalid", append(location, "type"),
          assistant                                  ? "Input tag does not match any of the expected tags: 'output_text', 'refusal'"
          : kinds == PartKinds::instruction_content ? "Input tag does not match any of the expected tags: 'input_text', 'input_json'"
                                                    : "Input tag does not match any of the expected tags: 'input_text', 'input_image', 'input_json'");
    return std::nullopt;
  }

  std::optional<std::string> check_text_part(const Json& part, const Location& location, const char* field,
                                             bool cache_breakpoint) {
    const Json* text = member(part, field);
    std::optional<std::string> result;
    if (text == nullptr) {
      issue("missing", append(location, field), "Field required");
    } else if (!text->is_string()) {
      issue("string_type", append(location, field), "Input should be a valid string");
    } else if (text->get_ref<const std::string&>().empty()) {
      issue("string_too_short", append(location, field), "String should have at least 1 character");
    } else {
      result = text->get<std::string>();
    }
    if (cache_breakpoint) {
      // Prompt caching is automatic (§11.5): a breakpoint is checked for shape and otherwise ignored.
      check_cache_breakpoint(member(part, "prompt_cache_breakpoint"), append(location, "prompt_cache_breakpoint"));
      forbid_extra_members(part, location, {"type", field, "prompt_cache_breakpoint"});
    } else {
      forbid_extra_members(part, location, {"type", field});
    }
    return result;
  }

  void check_cache_breakpoint(const Json* breakpoint, const Location& location) {
    if (breakpoint == nullptr || breakpoint->is_null()) return;
    if (!breakpoint->is_object()) return issue("dict_type", location, "Input should be a valid dictionary");
    const Json* mode = member(*breakpoint, "mode");
    if (mode == nullptr) {
      issue("missing", append(location, "mode"), "Field required");
    } else if (!(mode->is_string() && *mode == "explicit")) {
      issue("literal_error", append(location, "mode"), "Input should be 'explicit'");
    }
    forbid_extra_members(*breakpoint, location, {"mode"});
  }

  // A question's instructions: a string, or input_text/input_json parts joined like message text.
  void check_instructions(const Json* instructions, const Location& location, Question& pipeline_question) {
    if (instructions == nullptr) return issue("missing", location, "Field required");
    if (instructions->is_string()) {
      pipeline_question.instructions = *instructions;
      return;
    }
    if (!instructions->is_array()) return issue("value_type", location, "Input should be a valid string or list");
    if (instructions->empty()) {
      return issue("too_short", location, "List should have at least 1 item after validation, not 0");
    }
    std::string joined;
    int64_t index = 0;
    for (const Json& part : *instructions) {
      if (auto text = check_part(part, append(location, index++), PartKinds::question_instructions)) {
        join_text(joined, *text);
      }
    }
    pipeline_question.instructions = joined;
  }

  void check_questions(const Json* questions, DecisionsRequest& result) {
    const Location location{"questions"};
    if (questions == nullptr) return issue("missing", location, "Field required");
    if (!questions->is_array()) return issue("list_type", location, "Input should be a valid list");
    if (questions->empty()) return issue("too_short", location, "List should have at least 1 item after validation, not 0");
    if (questions->size() > limits_.max_questions) {
      issue("too_long", location, "List should have at most " + std::to_string(limits_.max_questions) + " items");
    }
    std::set<std::string> names;
    int64_t index = 0;
    for (const Json& question : *questions) {
      check_question(question, append(location, index), index, names, result);
      ++index;
    }
  }

  void check_question(const Json& value, const Location& location, int64_t index, std::set<std::string>& names,
                      DecisionsRequest& result) {
    if (!value.is_object()) return issue("dict_type", location, "Input should be a valid dictionary");
    DecisionsQuestion question;
    Question pipeline_question;
    pipeline_question.key = std::to_string(index);

    const Json* type = member(value, "type");
    if (type == nullptr) return issue("missing", append(location, "type"), "Field required");
    if (type->is_string() && *type == "predicate") {
      question.type = DecisionsQuestionType::predicate;
      pipeline_question.type = QuestionType::noul;
    } else if (type->is_string() && *type == "choice") {
      question.type = DecisionsQuestionType::choice;
      pipeline_question.type = QuestionType::choice;
    } else if (type->is_string() && *type == "score") {
      question.type = DecisionsQuestionType::score;
      pipeline_question.type = QuestionType::score;
    } else {
      return issue("union_tag_invalid", append(location, "type"),
                   "Input tag does not match any of the expected tags: 'predicate', 'choice', 'score'");
    }

    if (const Json* name = member(value, "name"); name != nullptr && !name->is_null()) {
      const Location name_location = append(location, "name");
      if (!name->is_string()) {
        issue("string_type", name_location, "Input should be a valid string");
      } else {
        const size_t before = issues_.size();
        validation::check_name(name->get_ref<const std::string&>(), name_location, issues_);
        if (issues_.size() == before && !names.insert(name->get<std::string>()).second) {
          issue("duplicate", name_location, "Question names must be unique");
        }
        question.name = name->get<std::string>();
      }
    }

    check_instructions(member(value, "instructions"), append(location, "instructions"), pipeline_question);

    switch (question.type) {
      case DecisionsQuestionType::predicate:
        forbid_extra_members(value, location, {"type", "name", "instructions"});
        break;
      case DecisionsQuestionType::choice:
        check_choices(member(value, "choices"), append(location, "choices"), question, pipeline_question);
        forbid_extra_members(value, location, {"type", "name", "instructions", "choices"});
        break;
      case DecisionsQuestionType::score:
        check_levels(member(value, "levels"), append(location, "levels"), question, pipeline_question);
        forbid_extra_members(value, location, {"type", "name", "instructions", "levels"});
        break;
    }
    result.questions.push_back(std::move(question));
    result.pipeline.questions.push_back(std::move(pipeline_question));
  }

  std::optional<std::string> check_description(const Json& entry, const Location& location) {
    const Json* description = member(entry, "description");
    if (description == nullptr || description->is_null()) return std::nullopt;
    if (!description->is_string()) {
      issue("string_type", append(location, "description"), "Input should be a valid string");
      return std::nullopt;
    }
    return description->get<std::string>();
  }

  // Calls check(entry, its location) for each entry of the list that is an object, reporting the others.
  template <typename Check>
  void for_each_object(const Json& list, const Location& location, Check check) {
    int64_t index = 0;
    for (const Json& entry : list) {
      const Location entry_location = append(location, index++);
      if (entry.is_object()) {
        check(entry, entry_location);
      } else {
        issue("dict_type", entry_location, "Input should be a valid dictionary");
      }
    }
  }

  void check_choices(const Json* choices, const Location& location, DecisionsQuestion& question,
                     Question& pipeline_question) {
    if (!check_list(choices, location, 2, max_choice_options)) return;
    std::set<std::string> seen;
    for_each_object(*choices, location, [&](const Json& choice, const Location& choice_location) {
      const Json* value = member(choice, "value");
      const Location value_location = append(choice_location, "value");
      std::string text;
      if (value == nullptr) {
        issue("missing", value_location, "Field required");
      } else if (value->is_boolean()) {
        text = value->get<bool>() ? "true" : "false";
      } else if (value->is_string()) {
        text = value->get<std::string>();
        validation::check_name(text, value_location, issues_);
      } else {
        issue("value_type", value_location, "Input should be a valid string or boolean");
      }
      const std::optional<std::string> description = check_description(choice, choice_location);
      forbid_extra_members(choice, choice_location, {"value", "description"});
      if (value == nullptr) return;
      if (!seen.insert(text).second) issue("duplicate", value_location, "Choice values must be distinct");
      question.choice_values.push_back(*value);
      pipeline_question.options.push_back(
          ChoiceOption{text, description ? Json(*description) : Json(nullptr)});
    });
  }

  void check_levels(const Json* levels, const Location& location, DecisionsQuestion& question,
                    Question& pipeline_question) {
    if (!check_list(levels, location, min_score_levels, max_score_levels)) return;
    for_each_object(*levels, location, [&](const Json& level, const Location& level_location) {
      const Json* label = member(level, "label");
      const Location label_location = append(level_location, "label");
      std::string text;
      if (label == nullptr) {
        issue("missing", label_location, "Field required");
      } else if (!label->is_string()) {
        issue("string_type", label_location, "Input should be a valid string");
      } else if (label->get_ref<const std::string&>().empty()) {
        issue("string_too_short", label_location, "String should have at least 1 character");
      } else {
        text = label->get<std::string>();
      }
      const std::optional<std::string> description = check_description(level, level_location);
      forbid_extra_members(level, level_location, {"label", "description"});
      question.level_labels.push_back(text);
      pipeline_question.levels.emplace_back(description ? text + " - " + *description : text);
    });
  }

  const RequestLimits& limits_;
  std::vector<ValidationIssue> issues_;
  std::vector<EncodedImage> media_;  // input_image parts, in order
  std::optional<ApiError> refusal_;
};

void append_name(std::string& out, const std::optional<std::string>& name) {
  out += ",\"name\":";
  if (name) {
    append_json_string(out, *name);
  } else {
    out += "null";
  }
}

// The probabilities and confidence of a choice or score answer; value_members writes entry i's own members.
template <typename ValueMembers>
void append_probabilities(std::string& out, const Answer& answer, size_t count, ValueMembers value_members) {
  out += ",\"probabilities\":[";
  for (size_t i = 0; i < count; ++i) {
    if (i > 0) out += ',';
    out += '{';
    value_members(i);
    out += ",\"probability\":";
    append_json_double(out, answer.probabilities[i]);
    out += '}';
  }
  out += "],\"confidence\":";
  append_json_double(out, answer.confidence);
}

}  // namespace

Result<DecisionsRequest> parse_decisions_request(std::string_view body, const RequestLimits& limits) {
  return validation::parse_then_validate(body, limits, &validate_decisions_request);
}

Result<DecisionsRequest> validate_decisions_request(const Json& body, const RequestLimits& limits) {
  return DecisionsValidator(limits).run(body);
}

Json decisions_to_system_one_body(const DecisionsRequest& request) {
  Json body = Json::object();
  if (request.pipeline.model) body["model"] = *request.pipeline.model;
  body["state"] = request.pipeline.state;
  Json questions = Json::object();
  for (const Question& question : request.pipeline.questions) {
    Json entry = Json::object();
    entry["type"] = std::string(question_type_name(question.type));
    entry["instructions"] = question.instructions;
    if (question.type == QuestionType::choice) {
      Json criteria = Json::object();
      for (const ChoiceOption& option : question.options) criteria[option.name] = option.description;
      entry["criteria"] = std::move(criteria);
    } else if (question.type == QuestionType::score) {
      entry["criteria"] = Json(question.levels);
    }
    questions[question.key] = std::move(entry);
  }
  body["questions"] = std::move(questions);
  return body;
}

std::string serialize_decisions_response(const DecisionsRequest& request, const DecisionResult& result) {
  std::string out = "{\"model\":";
  append_json_string(out, result.model);
  out += ",\"answers\":[";
  for (size_t q = 0; q < request.questions.size(); ++q) {
    const DecisionsQuestion& question = request.questions[q];
    const Answer& answer = result.answers[q];
    if (q > 0) out += ',';
    switch (question.type) {
      case DecisionsQuestionType::predicate:
        out += "{\"type\":\"predicate\"";
        append_name(out, question.name);
        out += ",\"probability\":";
        append_json_double(out, answer.probabilities[0]);
        break;
      case DecisionsQuestionType::choice:
        out += "{\"type\":\"choice\"";
        append_name(out, question.name);
        out += ",\"choice\":";
        append_json(out, question.choice_values[answer.choice_index]);
        append_probabilities(out, answer, question.choice_values.size(), [&](size_t i) {
          out += "\"value\":";
          append_json(out, question.choice_values[i]);
        });
        break;
      case DecisionsQuestionType::score:
        out += "{\"type\":\"score\"";
        append_name(out, question.name);
        out += ",\"score\":";
        append_json_double(out, answer.score);
        append_probabilities(out, answer, question.level_labels.size(), [&](size_t i) {
          out += "\"value\":" + std::to_string(i) + ",\"label\":";
          append_json_string(out, question.level_labels[i]);
        });
        break;
    }
    out += '}';
  }
  const std::string tokens = std::to_string(result.input_tokens);
  out += "],\"usage\":{\"input_tokens\":" + tokens + ",\"input_tokens_details\":{\"cached_tokens\":" +
         std::to_string(result.cached_tokens) +
         ",\"cache_write_tokens\":0},\"output_tokens\":0,\"output_tokens_details\":{\"reasoning_tokens\":0},"
         "\"total_tokens\":" +
         tokens + "}}";
  return out;
}

}  // namespace s1::api
