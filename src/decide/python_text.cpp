#include "decide/python_text.h"

#include <cstdio>

#include "decide/prompt.h"
#include "text/unicode.h"
#include "text/utf8.h"

namespace s1::decide {
namespace {

void append_python_repr(std::string& out, const api::Json& value);

void append_python_string_repr(std::string& out, std::string_view text) {
  const bool has_single = text.find('\'') != std::string_view::npos;
  const bool has_double = text.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  out += quote;
  for (std::size_t position = 0; position < text.size();) {
    const text::DecodedChar decoded = text::decode_utf8(text, position);
    const char32_t c = decoded.code_point;
    if (c == static_cast<char32_t>(quote) || c == U'\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == U'\t') {
      out += "\\t";
    } else if (c == U'\n') {
      out += "\\n";
    } else if (c == U'\r') {
      out += "\\r";
    } else if (!text::unicode::is_python_printable(c)) {
      char escaped[16];
      if (c <= 0xFF) {
        std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned>(c));
      } else if (c <= 0xFFFF) {
        std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
      } else {
        std::snprintf(escaped, sizeof escaped, "\\U%08x", static_cast<unsigned>(c));
      }
      out += escaped;
    } else {
      out.append(text.substr(position, decoded.length));
    }
    position += decoded.length;
  }
  out += quote;
}

void append_python_scalar(std::string& out, const api::Json& value) {
  switch (value.type()) {
    case api::Json::value_t::null: out += "None"; break;
    case api::Json::value_t::boolean: out += value.get<bool>() ? "True" : "False"; break;
    case api::Json::value_t::number_integer: out += std::to_string(value.get<int64_t>()); break;
    case api::Json::value_t::number_unsigned: out += std::to_string(value.get<uint64_t>()); break;
    case api::Json::value_t::number_float: out += python_float_repr(value.get<double>()); break;
    default: append_python_repr(out, value); break;
  }
}

void append_python_repr(std::string& out, const api::Json& value) {
  switch (value.type()) {
    case api::Json::value_t::string: append_python_string_repr(out, value.get_ref<const std::string&>()); break;
    case api::Json::value_t::array: {
      out += '[';
      bool first = true;
      for (const auto& element : value) {
        if (!first) out += ", ";
        first = false;
        append_python_repr(out, element);
      }
      out += ']';
      break;
    }
    case api::Json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, element] : value.items()) {
        if (!first) out += ", ";
        first = false;
        append_python_string_repr(out, key);
        out += ": ";
        append_python_repr(out, element);
      }
      out += '}';
      break;
    }
    default: append_python_scalar(out, value); break;
  }
}

}  // namespace

std::string python_str(const api::Json& value) {
  if (value.is_string()) return value.get<std::string>();
  std::string out;
  append_python_scalar(out, value);
  return out;
}

std::string python_repr(const api::Json& value) {
  std::string out;
  append_python_repr(out, value);
  return out;
}

std::string python_flatten_whitespace(std::string_view text) {
  std::string out;
  bool pending_space = false;
  for (std::size_t position = 0; position < text.size();) {
    const text::DecodedChar decoded = text::decode_utf8(text, position);
    if (text::unicode::is_python_space(decoded.code_point)) {
      pending_space = !out.empty();
    } else {
      if (pending_space) out += ' ';
      pending_space = false;
      out.append(text.substr(position, decoded.length));
    }
    position += decoded.length;
  }
  return out;
}

std::string_view python_strip(std::string_view text) {
  std::size_t begin = 0;
  std::size_t end = text.size();
  while (begin < end) {
    const text::DecodedChar decoded = text::decode_utf8(text, begin);
    if (!text::unicode::is_python_space(decoded.code_point)) break;
    begin += decoded.length;
  }
  // Walk forward to find the last non-space character's end (UTF-8 cannot be decoded backwards
  // without re-synchronising, and prompts are short enough).
  std::size_t last_end = begin;
  for (std::size_t position = begin; position < end;) {
    const text::DecodedChar decoded = text::decode_utf8(text, position);
    position += decoded.length;
    if (!text::unicode::is_python_space(decoded.code_point)) last_end = position;
  }
  return text.substr(begin, last_end - begin);
}

std::string_view python_prefix(std::string_view text, std::size_t count) {
  std::size_t position = 0;
  for (std::size_t taken = 0; taken < count && position < text.size(); ++taken) {
    position += text::decode_utf8(text, position).length;
  }
  return text.substr(0, position);
}

}  // namespace s1::decide
