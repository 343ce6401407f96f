#include "decide/contracts/startlux_prompt.h"

#include <array>
#include <utility>

#include "decide/prompt.h"
#include "decide/python_text.h"
#include "text/unicode.h"
#include "text/utf8.h"

namespace s1::decide {
namespace {

constexpr std::string_view system_message =
    "Apply the criterion to the evidence. Choose exactly one listed option. Answer with its letter only.";
constexpr std::string_view default_noul_instructions = "Which answer fits the evidence?";
// jevfmt's ANNOTATE_MIN: arrays this long carry each item's index.
constexpr std::size_t annotate_min_items = 8;

// Python's \d in a str pattern: the Unicode decimal digits (Nd) of Python 3.11's Unicode 14 tables.
bool python_is_digit(char32_t code_point) {
  static constexpr std::array<std::pair<char32_t, char32_t>, 62> ranges{{
      {0x30, 0x39},       {0x660, 0x669},     {0x6F0, 0x6F9},     {0x7C0, 0x7C9},     {0x966, 0x96F},
      {0x9E6, 0x9EF},     {0xA66, 0xA6F},     {0xAE6, 0xAEF},     {0xB66, 0xB6F},     {0xBE6, 0xBEF},
      {0xC66, 0xC6F},     {0xCE6, 0xCEF},     {0xD66, 0xD6F},     {0xDE6, 0xDEF},     {0xE50, 0xE59},
      {0xED0, 0xED9},     {0xF20, 0xF29},     {0x1040, 0x1049},   {0x1090, 0x1099},   {0x17E0, 0x17E9},
      {0x1810, 0x1819},   {0x1946, 0x194F},   {0x19D0, 0x19D9},   {0x1A80, 0x1A89},   {0x1A90, 0x1A99},
      {0x1B50, 0x1B59},   {0x1BB0, 0x1BB9},   {0x1C40, 0x1C49},   {0x1C50, 0x1C59},   {0xA620, 0xA629},
      {0xA8D0, 0xA8D9},   {0xA900, 0xA909},   {0xA9D0, 0xA9D9},   {0xA9F0, 0xA9F9},   {0xAA50, 0xAA59},
      {0xABF0, 0xABF9},   {0xFF10, 0xFF19},   {0x104A0, 0x104A9}, {0x10D30, 0x10D39}, {0x11066, 0x1106F},
      {0x110F0, 0x110F9}, {0x11136, 0x1113F}, {0x111D0, 0x111D9}, {0x112F0, 0x112F9}, {0x11450, 0x11459},
      {0x114D0, 0x114D9}, {0x11650, 0x11659}, {0x116C0, 0x116C9}, {0x11730, 0x11739}, {0x118E0, 0x118E9},
      {0x11950, 0x11959}, {0x11C50, 0x11C59}, {0x11D50, 0x11D59}, {0x11DA0, 0x11DA9}, {0x16A60, 0x16A69},
      {0x16AC0, 0x16AC9}, {0x16B50, 0x16B59}, {0x1D7CE, 0x1D7FF}, {0x1E140, 0x1E149}, {0x1E2F0, 0x1E2F9},
      {0x1E950, 0x1E959}, {0x1FBF0, 0x1FBF9},
  }};
  for (const auto& [first, last] : ranges) {
    if (code_point >= first && code_point <= last) return true;
  }
  return false;
}

// [A-Za-z] under re.IGNORECASE: also the four characters whose case mappings reach ASCII letters.
bool python_is_ignorecase_letter(char32_t c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == 0x130 || c == 0x131 || c == 0x17F || c == 0x212A;
}

std::vector<char32_t> code_points(std::string_view text) {
  std::vector<char32_t> out;
  for (std::size_t position = 0; position < text.size();) {
    const text::DecodedChar decoded = text::decode_utf8(text, position);
    out.push_back(decoded.code_point);
    position += decoded.length;
  }
  return out;
}

std::string from_code_points(std::span<const char32_t> points) {
  std::string out;
  for (const char32_t c : points) out += text::encode_utf8(c).view();
  return out;
}

bool is_blank(std::string_view text) { return python_strip(text).empty(); }

// annotate_indices: arrays of 8 or more items become [{"_index": i, ...object members}] or
// [{"_index": i, "value": item}], recursively. An object's own "_index" member overwrites the value but
// keeps the first position, as Python's {"_index": i, **item} does.
api::Json annotate_indices(const api::Json& value) {
  if (value.is_array()) {
    api::Json out = api::Json::array();
    const bool annotate = value.size() >= annotate_min_items;
    for (std::size_t i = 0; i < value.size(); ++i) {
      const api::Json& item = value[i];
      if (!annotate) {
        out.push_back(annotate_indices(item));
      } else if (item.is_object()) {
        api::Json entry = api::Json::object();
        entry["_index"] = i;
        for (const auto& [key, member] : item.items()) entry[key] = annotate_indices(member);
        out.push_back(std::move(entry));
      } else {
        api::Json entry = api::Json::object();
        entry["_index"] = i;
        entry["value"] = annotate_indices(item);
        out.push_back(std::move(entry));
      }
    }
    return out;
  }
  if (value.is_object()) {
    api::Json out = api::Json::object();
    for (const auto& [key, member] : value.items()) out[key] = annotate_indices(member);
    return out;
  }
  return value;
}

// Case-insensitive match of an ASCII lowercase word at points[position…], with re.IGNORECASE's extra
// spellings of 'i'.
bool match_word(std::span<const char32_t> points, std::size_t& position, std::string_view word) {
  if (points.size() - position < word.size()) return false;
  for (std::size_t k = 0; k < word.size(); ++k) {
    const char32_t c = points[position + k];
    const char32_t lower = (c >= 'A' && c <= 'Z') ? c + 32 : c;
    const bool same = lower == static_cast<char32_t>(word[k]) || (word[k] == 'i' && (c == 0x130 || c == 0x131));
    if (!same) return false;
  }
  position += word.size();
  return true;
}

// \d{1,3} then the end of the id.
bool ends_with_short_number(std::span<const char32_t> points, std::size_t position, bool allow_closer) {
  std::size_t digits = 0;
  while (position < points.size() && python_is_digit(points[position]) && digits < 3) {
    ++position;
    ++digits;
  }
  if (digits == 0) return false;
  if (allow_closer && position < points.size() && (points[position] == ')' || points[position] == '.')) ++position;
  return position == points.size();
}

}  // namespace

std::string_view startlux_system_message() { return system_message; }

std::optional<std::string> startlux_value_text(const api::Json& value) {
  if (value.is_null()) return std::nullopt;
  std::string text(python_strip(value.is_string() ? value.get<std::string>() : python_json(value)));
  if (text.empty()) return std::nullopt;
  return text;
}

std::string startlux_state_text(const api::Json& state) {
  if (state.is_string()) return state.get<std::string>();
  if (state.is_null() || ((state.is_object() || state.is_array()) && state.empty())) return "";
  return python_json(annotate_indices(state));
}

std::string startlux_normalised(std::string_view text) {
  std::vector<char32_t> collapsed;
  bool in_run = false;
  for (const char32_t c : code_points(text)) {
    if (text::unicode::is_python_space(c) || c == '_' || c == '-') {
      if (!in_run) collapsed.push_back(' ');
      in_run = true;
    } else {
      collapsed.push_back(c);
      in_run = false;
    }
  }
  std::string out;
  for (const char32_t c : code_points(python_strip(from_code_points(collapsed)))) {
    // The one character whose full lowercase is two characters (İ → i + combining dot above).
    if (c == 0x130) {
      out += "i\xcc\x87";
    } else {
      out += text::encode_utf8(text::unicode::to_lower(c)).view();
    }
  }
  return out;
}

bool startlux_is_bare_id(std::string_view id) {
  // ^(?:\(?[A-Za-z][\).]?|\(?\d{1,3}[\).]?|option[_ ]?\d{1,3}|opt[_ ]?\d{1,3})$ with re.IGNORECASE.
  const std::vector<char32_t> points = code_points(id);
  if (points.empty()) return false;
  std::size_t start = points.front() == '(' ? 1 : 0;
  if (start < points.size() && python_is_ignorecase_letter(points[start])) {
    std::size_t end = start + 1;
    if (end < points.size() && (points[end] == ')' || points[end] == '.')) ++end;
    if (end == points.size()) return true;
  }
  if (ends_with_short_number(points, start, true)) return true;
  for (const std::string_view word : {std::string_view("option"), std::string_view("opt")}) {
    std::size_t position = 0;
    if (!match_word(points, position, word)) continue;
    if (ends_with_short_number(points, position, false)) return true;
    if (position < points.size() && (points[position] == '_' || points[position] == ' ') &&
        ends_with_short_number(points, position + 1, false)) {
      return true;
    }
  }
  return false;
}

StartLuxQuestion startlux_question(const api::Question& question) {
  StartLuxQuestion out;
  out.type = question.type;
  out.instructions = startlux_value_text(question.instructions).value_or("");
  switch (question.type) {
    case api::QuestionType::choice:
      for (const api::ChoiceOption& option : question.options) {
        out.options.push_back({option.name, startlux_value_text(option.description)});
      }
      break;
    case api::QuestionType::score:
      for (std::size_t level = 0; level < question.levels.size(); ++level) {
        out.options.push_back({std::to_string(level), startlux_value_text(question.levels[level])});
      }
      break;
    case api::QuestionType::noul:
      out.options.push_back({"true", startlux_value_text(question.noul_true)});
      out.options.push_back({"false", startlux_value_text(question.noul_false)});
      if (out.instructions.empty()) out.instructions = default_noul_instructions;
      break;
  }
  return out;
}

std::optional<api::ApiError> startlux_refusal(const api::Question& question) {
  if (question.type == api::QuestionType::choice && question.options.size() == 1) return std::nullopt;
  const StartLuxQuestion record = startlux_question(question);
  std::vector<api::ValidationIssue> issues;
  if (record.instructions.empty()) {
    issues.push_back({"missing", {"questions", question.key, "instructions"},
                      "This model needs instructions for choice and score questions"});
  }
  if (question.type == api::QuestionType::choice) {
    for (const api::ChoiceOption& option : question.options) {
      if (is_blank(option.name)) {
        issues.push_back({"string_pattern_mismatch", {"questions", question.key, "criteria", option.name},
                          "This model needs option names that are not blank"});
      } else if (code_points(option.name).size() > startlux_max_option_id_characters) {
        issues.push_back({"string_too_long", {"questions", question.key, "criteria", option.name},
                          "This model accepts option names of at most 200 characters"});
      }
    }
  }
  if (issues.empty()) return std::nullopt;
  return api::ApiError::validation(std::move(issues));
}

std::string startlux_user_message(std::string_view state_text, const StartLuxQuestion& question,
                                  std::span<const std::size_t> order) {
  bool hide_ids = question.type == api::QuestionType::choice;
  for (const std::size_t position : order) {
    const StartLuxOption& option = question.options.at(position);
    hide_ids = hide_ids && option.criterion.has_value() && startlux_is_bare_id(option.id);
  }
  std::string user = "Evidence:\n";
  user += is_blank(state_text) ? std::string_view("(none)") : state_text;
  user += "\n\nQuestion: ";
  user += python_strip(question.instructions);
  user += "\nOptions:\n";
  for (std::size_t k = 0; k < order.size(); ++k) {
    const StartLuxOption& option = question.options.at(order[k]);
    const std::string name = question.type == api::QuestionType::noul ? (option.id == "true" ? "yes" : "no") : option.id;
    std::string body;
    if (hide_ids) {
      body = *option.criterion;
    } else if (!option.criterion || is_blank(*option.criterion) ||
               startlux_normalised(*option.criterion) == startlux_normalised(name)) {
      body = name;
    } else {
      body = name + ": " + *option.criterion;
    }
    if (k > 0) user += '\n';
    user += letter_label(k) + ") " + body;
  }
  return user;
}

std::vector<text::ChatMessage> startlux_messages(std::string_view state_text, const StartLuxQuestion& question,
                                                 std::span<const std::size_t> order) {
  return {{"system", std::string(system_message)}, {"user", startlux_user_message(state_text, question, order)}};
}

}  // namespace s1::decide
