#include "text/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "text/unicode.h"
#include "text/utf8.h"

namespace s1::text::jinja {

Value::Value(List value) : data_(std::make_shared<const List>(std::move(value))) {}
Value::Value(Dict value) : data_(std::make_shared<const Dict>(std::move(value))) {}

Value Value::tuple(List value) {
  Value result(std::move(value));
  result.tuple_ = true;
  return result;
}

Value Value::generator(List items) { return Value(std::make_shared<Generator>(Generator{std::move(items), false})); }

const Value* Dict::find(std::string_view key) const {
  for (const auto& [name, value] : items_) {
    if (name == key) return &value;
  }
  return nullptr;
}

void Dict::set(std::string key, Value value) {
  for (auto& [name, existing] : items_) {
    if (name == key) {
      existing = std::move(value);
      return;
    }
  }
  items_.emplace_back(std::move(key), std::move(value));
}

Value Value::from_json(const nlohmann::ordered_json& json) {
  switch (json.type()) {
    case nlohmann::ordered_json::value_t::null:
      return none();
    case nlohmann::ordered_json::value_t::boolean:
      return json.get<bool>();
    case nlohmann::ordered_json::value_t::number_integer:
      return json.get<int64_t>();
    case nlohmann::ordered_json::value_t::number_unsigned:
      if (json.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
        throw RenderError("integer out of range: " + json.dump());
      return static_cast<int64_t>(json.get<uint64_t>());
    case nlohmann::ordered_json::value_t::number_float:
      return json.get<double>();
    case nlohmann::ordered_json::value_t::string:
      return json.get<std::string>();
    case nlohmann::ordered_json::value_t::array: {
      List list;
      list.reserve(json.size());
      for (const auto& element : json) list.push_back(from_json(element));
      return list;
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict dict;
      for (const auto& [key, element] : json.items()) dict.set(key, from_json(element));
      return dict;
    }
    default:
      throw RenderError("a JSON value of type " + std::string(json.type_name()) + " has no template value");
  }
}

double Value::number() const {
  switch (kind()) {
    case Kind::boolean:
      return boolean() ? 1 : 0;
    case Kind::integer:
      return static_cast<double>(integer());
    case Kind::floating:
      return floating();
    default:
      throw RenderError("'" + std::string(type_name()) + "' is not a number");
  }
}

std::string_view Value::type_name() const {
  switch (kind()) {
    case Kind::undefined:
      return "Undefined";
    case Kind::none:
      return "NoneType";
    case Kind::boolean:
      return "bool";
    case Kind::integer:
      return "int";
    case Kind::floating:
      return "float";
    case Kind::string:
      return "str";
    case Kind::list:
      return "list";
    case Kind::dict:
      return "dict";
    case Kind::name_space:
      return "Namespace";
    case Kind::callable:
      return "Macro";
    case Kind::generator:
      return "generator";
  }
  return "";
}

bool truthy(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::undefined:
    case Value::Kind::none:
      return false;
    case Value::Kind::boolean:
      return value.boolean();
    case Value::Kind::integer:
      return value.integer() != 0;
    case Value::Kind::floating:
      return value.floating() != 0;
    case Value::Kind::string:
      return !value.string().empty();
    case Value::Kind::list:
      return !value.list().empty();
    case Value::Kind::dict:
      return value.dict().size() != 0;
    case Value::Kind::name_space:
    case Value::Kind::callable:
    case Value::Kind::generator:
      return true;
  }
  return false;
}

namespace {
// Python's bool is an int: True == 1.
int64_t integral(const Value& value) {
  return value.is(Value::Kind::integer) ? value.integer() : int64_t{value.boolean()};
}
}  // namespace

bool equal(const Value& left, const Value& right) {
  if (left.is_number() && right.is_number()) {
    if (left.is(Value::Kind::floating) || right.is(Value::Kind::floating)) return left.number() == right.number();
    return integral(left) == integral(right);
  }
  if (left.kind() != right.kind()) return false;
  switch (left.kind()) {
    case Value::Kind::undefined:
    case Value::Kind::none:
      return true;
    case Value::Kind::string:
      return left.string() == right.string();
    case Value::Kind::list: {
      const List& a = left.list();
      const List& b = right.list();
      if (a.size() != b.size() || left.is_tuple() != right.is_tuple()) return false;
      for (size_t index = 0; index < a.size(); ++index) {
        if (!equal(a[index], b[index])) return false;
      }
      return true;
    }
    case Value::Kind::dict: {
      const Dict& a = left.dict();
      const Dict& b = right.dict();
      if (a.size() != b.size()) return false;
      for (const auto& [key, value] : a.items()) {
        const Value* other = b.find(key);
        if (other == nullptr || !equal(value, *other)) return false;
      }
      return true;
    }
    case Value::Kind::name_space:
      return &left.name_space() == &right.name_space();
    case Value::Kind::callable:
      return &left.callable() == &right.callable();
    case Value::Kind::generator:
      return &left.generator() == &right.generator();
    default:
      return false;
  }
}

int compare(const Value& left, const Value& right) {
  if (left.is_number() && right.is_number()) {
    if (left.is(Value::Kind::floating) || right.is(Value::Kind::floating)) {
      const double a = left.number();
      const double b = right.number();
      return a < b ? -1 : a > b ? 1 : 0;
    }
    const int64_t a = integral(left);
    const int64_t b = integral(right);
    return a < b ? -1 : a > b ? 1 : 0;
  }
  if (left.is(Value::Kind::string) && right.is(Value::Kind::string)) {
    // UTF-8 byte order is code point order, which is Python's string order.
    const int order = left.string().compare(right.string());
    return order < 0 ? -1 : order > 0 ? 1 : 0;
  }
  if (left.is(Value::Kind::list) && right.is(Value::Kind::list)) {
    const List& a = left.list();
    const List& b = right.list();
    for (size_t index = 0; index < a.size() && index < b.size(); ++index) {
      if (!equal(a[index], b[index])) return compare(a[index], b[index]);
    }
    return a.size() < b.size() ? -1 : a.size() > b.size() ? 1 : 0;
  }
  throw RenderError("'<' not supported between instances of '" + std::string(left.type_name()) + "' and '" +
                    std::string(right.type_name()) + "'");
}

std::string float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  // The shortest round-tripping digits, laid out as Python's repr: positional for exponents in
  // [-4, 16), scientific with a two-digit exponent otherwise, and ".0" on integral values.
  char buffer[64];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
  std::string scientific(buffer, end);
  const size_t e_at = scientific.find('e');
  std::string mantissa = scientific.substr(0, e_at);
  const int exponent = std::stoi(scientific.substr(e_at + 1));
  const bool negative = mantissa.front() == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (const char c : mantissa) {
    if (c != '.') digits.push_back(c);
  }
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) return out + "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    const auto whole = static_cast<size_t>(exponent) + 1;
    if (whole >= digits.size()) return out + digits + std::string(whole - digits.size(), '0') + ".0";
    return out + digits.substr(0, whole) + "." + digits.substr(whole);
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char exponent_text[16];
  std::snprintf(exponent_text, sizeof(exponent_text), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  return out + exponent_text;
}

namespace {

void append_hex_escape(std::string& out, char prefix, char32_t code_point, int width) {
  char buffer[16];
  std::snprintf(buffer, sizeof(buffer), "\\%c%0*x", prefix, width, static_cast<unsigned>(code_point));
  out += buffer;
}

std::string string_repr(std::string_view text) {
  const bool has_single = text.find('\'') != std::string_view::npos;
  const bool has_double = text.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (size_t at = 0; at < text.size();) {
    const DecodedChar decoded = decode_utf8(text, at);
    const char32_t c = decoded.code_point;
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      append_hex_escape(out, 'x', c, 2);
    } else if (c < 0x7f || unicode::is_python_printable(c)) {
      out.append(text.substr(at, decoded.length));
    } else if (c <= 0xff) {
      append_hex_escape(out, 'x', c, 2);
    } else if (c <= 0xffff) {
      append_hex_escape(out, 'u', c, 4);
    } else {
      append_hex_escape(out, 'U', c, 8);
    }
    at += decoded.length;
  }
  out += quote;
  return out;
}

void append_json_string(std::string& out, std::string_view text, bool ensure_ascii) {
  out += '"';
  for (size_t at = 0; at < text.size();) {
    const DecodedChar decoded = decode_utf8(text, at);
    const char32_t c = decoded.code_point;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20 || (ensure_ascii && c >= 0x7f && c <= 0xffff)) {
          append_hex_escape(out, 'u', c, 4);
        } else if (ensure_ascii && c > 0xffff) {
          const char32_t offset = c - 0x10000;
          append_hex_escape(out, 'u', 0xd800 + (offset >> 10), 4);
          append_hex_escape(out, 'u', 0xdc00 + (offset & 0x3ff), 4);
        } else {
          out.append(text.substr(at, decoded.length));
        }
    }
    at += decoded.length;
  }
  out += '"';
}

void append_json(std::string& out, const Value& value, const JsonOptions& options, size_t depth) {
  const auto newline = [&](size_t level) {
    out += '\n';
    for (size_t i = 0; i < level; ++i) out += *options.indent;
  };
  switch (value.kind()) {
    case Value::Kind::none:
      out += "null";
      return;
    case Value::Kind::boolean:
      out += value.boolean() ? "true" : "false";
      return;
    case Value::Kind::integer:
      out += std::to_string(value.integer());
      return;
    case Value::Kind::floating: {
      const double number = value.floating();
      out += std::isnan(number)   ? "NaN"
             : std::isinf(number) ? (number < 0 ? "-Infinity" : "Infinity")
                                  : float_repr(number);
      return;
    }
    case Value::Kind::string:
      append_json_string(out, value.string(), options.ensure_ascii);
      return;
    case Value::Kind::list: {
      const List& list = value.list();
      if (list.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t index = 0; index < list.size(); ++index) {
        if (index > 0) out += options.item_separator;
        if (options.indent) newline(depth + 1);
        append_json(out, list[index], options, depth + 1);
      }
      if (options.indent) newline(depth);
      out += ']';
      return;
    }
    case Value::Kind::dict: {
      std::vector<const std::pair<std::string, Value>*> items;
      for (const auto& item : value.dict().items()) items.push_back(&item);
      if (items.empty()) {
        out += "{}";
        return;
      }
      if (options.sort_keys) {
        std::stable_sort(items.begin(), items.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
      }
      out += '{';
      for (size_t index = 0; index < items.size(); ++index) {
        if (index > 0) out += options.item_separator;
        if (options.indent) newline(depth + 1);
        append_json_string(out, items[index]->first, options.ensure_ascii);
        out += options.key_separator;
        append_json(out, items[index]->second, options, depth + 1);
      }
      if (options.indent) newline(depth);
      out += '}';
      return;
    }
    default:
      throw RenderError("Object of type " + std::string(value.type_name()) + " is not JSON serializable");
  }
}

}  // namespace

std::string repr(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::string:
      return string_repr(value.string());
    case Value::Kind::list: {
      std::string out = value.is_tuple() ? "(" : "[";
      for (size_t index = 0; index < value.list().size(); ++index) {
        if (index > 0) out += ", ";
        out += repr(value.list()[index]);
      }
      if (value.is_tuple()) return out + (value.list().size() == 1 ? ",)" : ")");
      return out + "]";
    }
    case Value::Kind::dict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [key, element] : value.dict().items()) {
        if (!first) out += ", ";
        first = false;
        out += string_repr(key) + ": " + repr(element);
      }
      return out + "}";
    }
    default:
      return to_string(value);
  }
}

std::string to_string(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::undefined:
      return "";
    case Value::Kind::none:
      return "None";
    case Value::Kind::boolean:
      return value.boolean() ? "True" : "False";
    case Value::Kind::integer:
      return std::to_string(value.integer());
    case Value::Kind::floating:
      return float_repr(value.floating());
    case Value::Kind::string:
      return value.string();
    case Value::Kind::list:
    case Value::Kind::dict:
      return repr(value);
    case Value::Kind::name_space:
      return "<Namespace " + repr(Value(value.name_space().attributes)) + ">";
    case Value::Kind::callable:
      return "<Macro '" + value.callable().name + "'>";
    case Value::Kind::generator:
      // Python writes the generator's address: no template means that.
      throw RenderError(
          "unsupported construct: a generator (map, select, reject, unique, items) written as text; add | list");
  }
  return "";
}

std::string to_json(const Value& value, const JsonOptions& options) {
  std::string out;
  append_json(out, value, options, 0);
  return out;
}

}  // namespace s1::text::jinja
