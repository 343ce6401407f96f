#pragma once
// Rendering request values into prompt text: the default prompt of contract §5.3 and the
// Python-compatible compact JSON that reference workers feed their models.

#include "api/request.h"

#include <string>

namespace s1::decide {

// Python's json.dumps(value, ensure_ascii=False, separators=(",", ":")): member order kept, raw
// non-ASCII, Python's float repr (1e-05, 1e+16, 100.0).
std::string python_compact_json(const api::Json& value);

// A string is used as-is; objects and arrays become Python-compatible compact JSON.
std::string render_text(const api::Json& value);

// "A", …, "Z", "AA", "AB", …: the label of option `index`.
std::string letter_label(size_t index);

// The shared prefix of every question's prompt: the rendered state and a blank line.
std::string default_state_prefix(const api::Json& state);

// One question's block after the prefix: optional "Question:" line, one line per label, directive.
std::string default_question_block(const api::Question& question);

}  // namespace s1::decide
