#include "decide/prompt.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <utility>
#include <vector>

namespace s1::decide {
namespace {

void append_python_string(std::string& out, std::string_view text) {
  out += '"';
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (byte < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", byte);
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

// Python's float repr: the shortest round-trip digits, positional while the decimal exponent is in
// [-5, 16), scientific otherwise with a sign and at least two exponent digits.
void append_python_float(std::string& out, double value) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  const std::string_view scientific(buffer, static_cast<size_t>(result.ptr - buffer));
  const size_t e_position = scientific.find('e');
  std::string_view mantissa = scientific.substr(0, e_position);
  const int exponent = std::stoi(std::string(scientific.substr(e_position + 1)));
  const bool negative = !mantissa.empty() && mantissa[0] == '-';
  if (negative) mantissa.remove_prefix(1);
  std::string digits;
  for (const char c : mantissa) {
    if (c != '.') digits += c;
  }
  if (negative) out += '-';
  if (exponent >= 16 || exponent < -4) {
    out += digits[0];
    if (digits.size() > 1) {
      out += '.';
      out += digits.substr(1);
    }
    char exponent_text[16];
    std::snprintf(exponent_text, sizeof exponent_text, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out += exponent_text;
    return;
  }
  if (exponent < 0) {
    out += "0.";
    out.append(static_cast<size_t>(-exponent - 1), '0');
    out += digits;
    return;
  }
  const auto integer_digits = static_cast<size_t>(exponent) + 1;
  if (digits.size() <= integer_digits) {
    out += digits;
    out.append(integer_digits - digits.size(), '0');
    out += ".0";
  } else {
    out += digits.substr(0, integer_digits);
    out += '.';
    out += digits.substr(integer_digits);
  }
}

struct Separators {
  std::string_view item;
  std::string_view key;
};
constexpr Separators compact_separators{",", ":"};
constexpr Separators default_separators{", ", ": "};

enum class KeyOrder { as_sent, sorted };

void append_python_json(std::string& out, const api::Json& value, const Separators& separators, KeyOrder order) {
  switch (value.type()) {
    case api::Json::value_t::null: out += "null"; break;
    case api::Json::value_t::boolean: out += value.get<bool>() ? "true" : "false"; break;
    case api::Json::value_t::number_integer: out += std::to_string(value.get<int64_t>()); break;
    case api::Json::value_t::number_unsigned: out += std::to_string(value.get<uint64_t>()); break;
    case api::Json::value_t::number_float: append_python_float(out, value.get<double>()); break;
    case api::Json::value_t::string: append_python_string(out, value.get_ref<const std::string&>()); break;
    case api::Json::value_t::array: {
      out += '[';
      bool first = true;
      for (const auto& element : value) {
        if (!first) out += separators.item;
        first = false;
        append_python_json(out, element, separators, order);
      }
      out += ']';
      break;
    }
    case api::Json::value_t::object: {
      std::vector<std::pair<std::string_view, const api::Json*>> members;
      for (const auto& [key, element] : value.items()) members.emplace_back(key, &element);
      // Python's sort_keys compares code points; UTF-8 byte order is code point order.
      if (order == KeyOrder::sorted) std::ranges::stable_sort(members, {}, &decltype(members)::value_type::first);
      out += '{';
      bool first = true;
      for (const auto& [key, element] : members) {
        if (!first) out += separators.item;
        first = false;
        append_python_string(out, key);
        out += separators.key;
        append_python_json(out, *element, separators, order);
      }
      out += '}';
      break;
    }
    case api::Json::value_t::binary:
    case api::Json::value_t::discarded: out += "null"; break;
  }
}

}  // namespace

std::string python_float_repr(double value) {
  std::string out;
  append_python_float(out, value);
  return out;
}

std::string python_compact_json(const api::Json& value) {
  std::string out;
  append_python_json(out, value, compact_separators, KeyOrder::as_sent);
  return out;
}

std::string python_json(const api::Json& value) {
  std::string out;
  append_python_json(out, value, default_separators, KeyOrder::as_sent);
  return out;
}

std::string python_sorted_json(const api::Json& value) {
  std::string out;
  append_python_json(out, value, default_separators, KeyOrder::sorted);
  return out;
}

std::string python_sorted_compact_json(const api::Json& value) {
  std::string out;
  append_python_json(out, value, compact_separators, KeyOrder::sorted);
  return out;
}

std::string python_escaped_string_body(std::string_view text) {
  std::string out;
  append_python_string(out, text);
  return out.substr(1, out.size() - 2);
}

std::string render_text(const api::Json& value) {
  if (value.is_string()) return value.get<std::string>();
  return python_compact_json(value);
}

std::string python_text(const api::Json& value) {
  if (value.is_string()) return value.get<std::string>();
  return python_json(value);
}

std::string letter_label(size_t index) {
  std::string label;
  if (index >= 26) label += static_cast<char>('A' + index / 26 - 1);
  label += static_cast<char>('A' + index % 26);
  return label;
}

std::string default_state_prefix(const api::Json& state) { return render_text(state) + "\n\n"; }

std::string default_question_block(const api::Question& question) {
  std::string block;
  if (!question.instructions.is_null()) block += "Question: " + render_text(question.instructions) + "\n";
  switch (question.type) {
    case api::QuestionType::choice:
      for (size_t i = 0; i < question.options.size(); ++i) {
        const api::ChoiceOption& option = question.options[i];
        block += letter_label(i) + ": " + option.name;
        if (!option.description.is_null()) block += " - " + render_text(option.description);
        block += '\n';
      }
      block += "Answer with one letter.";
      break;
    case api::QuestionType::score:
      for (size_t i = 0; i < question.levels.size(); ++i) {
        block += std::to_string(i) + ": " + render_text(question.levels[i]) + "\n";
      }
      block += "Answer with one number.";
      break;
    case api::QuestionType::noul:
      if (!question.noul_true.is_null()) block += "yes: " + render_text(question.noul_true) + "\n";
      if (!question.noul_false.is_null()) block += "no: " + render_text(question.noul_false) + "\n";
      block += "Answer yes or no.";
      break;
  }
  return block;
}

}  // namespace s1::decide
