#pragma once
// Python's text coercions of request values, for contracts whose reference builds prompts with
// str(), repr() and str.split() (JEMM): the JSON value read as Python's json.loads returns it
// (null → None, true → True, objects → dicts in member order).

#include <string>
#include <string_view>

#include "api/json.h"

namespace s1::decide {

// str(value): a string as-is, None/True/False, numbers as Python writes them, containers as repr().
std::string python_str(const api::Json& value);

// repr(value): strings quoted and escaped as Python does (single quotes unless the text has a single
// quote and no double quote; \\t \\n \\r \\\\ short escapes, other non-printables as \\xNN, \\uNNNN or
// \\UNNNNNNNN), lists "[a, b]", dicts "{'k': v}".
std::string python_repr(const api::Json& value);

// " ".join(text.split()): every run of Python whitespace becomes one space, both ends trimmed.
std::string python_flatten_whitespace(std::string_view text);

// text.strip(): Python whitespace removed from both ends.
std::string_view python_strip(std::string_view text);

// text[:count] on code points.
std::string_view python_prefix(std::string_view text, std::size_t count);

}  // namespace s1::decide
