#pragma once
// Rendering request values into prompt text: the default prompt of contract §5.3 and the
// Python-compatible compact JSON that reference workers feed their models.

#include "api/request.h"

#include <string>
#include <string_view>

namespace s1::decide {

// Python's json.dumps(value, ensure_ascii=False, separators=(",", ":")): member order kept, raw
// non-ASCII, Python's float repr (1e-05, 1e+16, 100.0).
std::string python_compact_json(const api::Json& value);

// Python's json.dumps(value, ensure_ascii=False) with its default separators ", " and ": " (what
// Cua-S1's reference renders structured state with); otherwise as python_compact_json.
std::string python_json(const api::Json& value);

// Python's repr() of a float (also what json.dumps writes): 1e-05, 100.0, 1e+16.
std::string python_float_repr(double value);

// Python's json.dumps(value, ensure_ascii=False, sort_keys=True): as python_json with every object's
// members sorted by key (code point order), at any depth (what Open-Jev renders structured values with).
std::string python_sorted_json(const api::Json& value);

// Python's json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True): compact, every
// object's members sorted by key at any depth (how Clef's encode_record renders values).
std::string python_sorted_compact_json(const api::Json& value);

// The body of a JSON string as Python's json.dumps(text, ensure_ascii=False)[1:-1] writes it: quotes,
// backslashes and control characters escaped, everything else raw.
std::string python_escaped_string_body(std::string_view text);

// A string is used as-is; objects and arrays become Python-compatible compact JSON.
std::string render_text(const api::Json& value);

// A string as-is; anything else as python_json (json.dumps with default separators): how the Cua-S1
// and Decider references turn request values into prompt text.
std::string python_text(const api::Json& value);

// "A", …, "Z", "AA", "AB", …: the label of option `index`.
std::string letter_label(size_t index);

// The shared prefix of every question's prompt: the rendered state and a blank line.
std::string default_state_prefix(const api::Json& state);

// One question's block after the prefix: optional "Question:" line, one line per label, directive.
std::string default_question_block(const api::Question& question);

}  // namespace s1::decide
