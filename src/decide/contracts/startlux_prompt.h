#pragma once
// StartLux-Decision's prompt renderer: the package's `jevfmt` (render version jev_render_v3, read at
// Dilrevx/StartLux-Decision startlux_decision/jevfmt.py, the module StartLuxLabs/StartLux-Decision
// startlux_decision/model.py imports), applied to /v1/systemone questions as its from_systemone does.
//
//   system   "Apply the criterion to the evidence. Choose exactly one listed option. Answer with its
//            letter only."
//   user     "Evidence:\n" <state> "\n\nQuestion: " <instructions> "\nOptions:\n" <lines joined by \n>
//            with <state> "(none)" when it is blank, and one line "<letter>) <body>" per option.
//   state    a string as-is; anything else json.dumps(ensure_ascii=False) with default separators
//            after long arrays (8 or more items) are annotated with their item index.
//   options  choice: the criteria in request order, id = the name, criterion = its value as text;
//            noul: true ("yes"), then false ("no"), with their optional descriptions;
//            score: the levels lowest first, ids "0".."n-1".
//            A body is the id (noul: yes/no) when the criterion is absent or says the same as the id
//            (compared case-, space-, '_'- and '-'-insensitively), else "<id>: <criterion>"; choice ids
//            that all look like bare letters or numbers ("B", "(3)", "option 2") are hidden behind their
//            criteria when every option has one, so no line reads "A) C: Paris".
//   noul     without instructions asks "Which answer fits the evidence?".
//
// Text rules follow Python: strip() and the \s class are str.isspace(), lower() is the Unicode
// lowercase mapping, \d is any Unicode decimal digit and re.IGNORECASE letters include U+0130,
// U+0131, U+017F and U+212A.

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "api/errors.h"
#include "api/request.h"
#include "text/chat_template.h"

namespace s1::decide {

inline constexpr std::size_t startlux_max_row_options = 26;  // the letters A–Z
inline constexpr std::size_t startlux_max_option_id_characters = 200;

// What the chat template must end with when thinking is off: the thinking-off assistant prefix.
inline constexpr std::string_view startlux_thinking_off_suffix = "<think>\n\n</think>\n\n";

std::string_view startlux_system_message();

struct StartLuxOption {
  std::string id;
  std::optional<std::string> criterion;
};

// One question as jevfmt's record: its type, instructions and options (every option, request order).
struct StartLuxQuestion {
  api::QuestionType type = api::QuestionType::choice;
  std::string instructions;
  std::vector<StartLuxOption> options;
};

// from_systemone: the record of one /v1/systemone question.
StartLuxQuestion startlux_question(const api::Question& question);

// Why jevfmt refuses to render this question (422, naming the member), or nothing. A choice with
// one option is never refused: the reference answers it without rendering it.
std::optional<api::ApiError> startlux_refusal(const api::Question& question);

// state_text: the evidence block's text for a request's state.
std::string startlux_state_text(const api::Json& state);

// value_text: a value's text, stripped; nothing for null or blank.
std::optional<std::string> startlux_value_text(const api::Json& value);

// _norm: runs of whitespace, '_' and '-' become one space, then strip and lowercase.
std::string startlux_normalised(std::string_view text);

// Whether an option id looks like a bare letter or number ("B", "b)", "(12)", "7.", "opt 3").
bool startlux_is_bare_id(std::string_view id);

// The user message for the options at `order` (positions into question.options, in display order;
// empty renders the block up to "Options:\n").
std::string startlux_user_message(std::string_view state_text, const StartLuxQuestion& question,
                                  std::span<const std::size_t> order);

// The system and user messages.
std::vector<text::ChatMessage> startlux_messages(std::string_view state_text, const StartLuxQuestion& question,
                                                 std::span<const std::size_t> order);

}  // namespace s1::decide
