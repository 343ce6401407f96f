#include "text/jinja_builtins.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <map>

#include "text/jinja_strings.h"

namespace s1::text::jinja {
namespace {

constexpr size_t kMaxBuiltSize = 1u << 20;  // elements or bytes one repetition or range may make

// A call's arguments matched to a Python signature (positional-or-keyword parameters).
class Arguments {
 public:
  Arguments(const CallArguments& arguments, std::string_view function, std::vector<std::string_view> names)
      : arguments_(arguments), names_(std::move(names)) {
    if (arguments.positional.size() > names_.size()) {
      throw RenderError(std::string(function) + "() takes at most " + std::to_string(names_.size()) + " argument(s)");
    }
    for (const auto& [keyword, value] : arguments.keyword) {
      if (std::find(names_.begin(), names_.end(), keyword) == names_.end()) {
        throw RenderError(std::string(function) + "() got an unexpected keyword argument '" + keyword + "'");
      }
    }
  }

  const Value* get(size_t index) const {
    if (index < arguments_.positional.size()) return &arguments_.positional[index];
    for (const auto& [keyword, value] : arguments_.keyword) {
      if (keyword == names_[index]) return &value;
    }
    return nullptr;
  }
  Value get_or(size_t index, Value fallback) const {
    const Value* value = get(index);
    return value != nullptr ? *value : std::move(fallback);
  }
  bool flag(size_t index) const { return truthy(get_or(index, Value(false))); }
  const Value& required(size_t index, std::string_view function) const {
    const Value* value = get(index);
    if (value == nullptr)
      throw RenderError(std::string(function) + "() missing required argument '" + std::string(names_[index]) + "'");
    return *value;
  }

 private:
  const CallArguments& arguments_;
  std::vector<std::string_view> names_;
};

const std::string& as_string(const Value& value, std::string_view what) {
  if (!value.is(Value::Kind::string)) {
    throw RenderError(std::string(what) + " must be a string, not '" + std::string(value.type_name()) + "'");
  }
  return value.string();
}

int64_t as_integer(const Value& value, std::string_view what) {
  if (value.is(Value::Kind::integer)) return value.integer();
  if (value.is(Value::Kind::boolean)) return value.boolean() ? 1 : 0;
  throw RenderError(std::string(what) + " must be an integer, not '" + std::string(value.type_name()) + "'");
}

std::optional<std::string> optional_string(const Value* value, std::string_view what) {
  if (value == nullptr || value->is(Value::Kind::none)) return std::nullopt;
  return as_string(*value, what);
}

Value string_list(std::vector<std::string> parts) {
  List list;
  list.reserve(parts.size());
  for (std::string& part : parts) list.push_back(Value(std::move(part)));
  return Value(std::move(list));
}

Value undefined_attribute(const Value& object, std::string_view name) {
  return Value::undefined("'" + std::string(object.type_name()) + " object' has no attribute '" + std::string(name) +
                          "'");
}

// A dotted attribute path ("function.name", "0") as Jinja's attribute filters read it.
Value attribute_path(const Value& object, std::string_view path) {
  Value value = object;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string_view part =
        path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (value.is(Value::Kind::undefined)) return value;
    const bool numeric =
        !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    value = numeric ? item_of(value, Value(static_cast<int64_t>(std::stoll(std::string(part)))))
                    : attribute_of(value, part);
    if (dot == std::string_view::npos) return value;
    start = dot + 1;
  }
}

// Sort keys of the sort, dictsort, unique, min and max filters: strings compare lowercased unless
// case_sensitive.
Value sort_key(const Value& value, bool case_sensitive) {
  if (!case_sensitive && value.is(Value::Kind::string)) return Value(py::lower(value.string()));
  return value;
}

std::string html_escape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Python's int(text): optional sign, digits with underscores between, surrounding whitespace.
std::optional<int64_t> parse_int(std::string_view text, int base) {
  const std::string trimmed = py::strip(text, std::nullopt, true, true);
  size_t at = 0;
  bool negative = false;
  if (at < trimmed.size() && (trimmed[at] == '+' || trimmed[at] == '-')) negative = trimmed[at++] == '-';
  // A 0x/0o/0b prefix is allowed when it matches the base, and base 0 takes it from the prefix.
  const auto prefixed = [&](char letter) {
    return at + 1 < trimmed.size() && trimmed[at] == '0' && (trimmed[at + 1] | 0x20) == letter;
  };
  for (const auto& [letter, prefix_base] : {std::pair{'x', 16}, std::pair{'o', 8}, std::pair{'b', 2}}) {
    if ((base == prefix_base || base == 0) && prefixed(letter)) {
      base = prefix_base;
      at += 2;
      if (at < trimmed.size() && trimmed[at] == '_') ++at;
    }
  }
  if (base == 0) base = 10;
  if (at == trimmed.size()) return std::nullopt;
  int64_t value = 0;
  bool previous_digit = false;
  for (; at < trimmed.size(); ++at) {
    const char c = trimmed[at];
    if (c == '_' && previous_digit && at + 1 < trimmed.size()) {
      previous_digit = false;
      continue;
    }
    int digit = -1;
    if (c >= '0' && c <= '9') digit = c - '0';
    if (c >= 'a' && c <= 'z') digit = c - 'a' + 10;
    if (c >= 'A' && c <= 'Z') digit = c - 'A' + 10;
    if (digit < 0 || digit >= base) return std::nullopt;
    if (__builtin_mul_overflow(value, base, &value) || __builtin_add_overflow(value, digit, &value))
      return std::nullopt;
    previous_digit = true;
  }
  if (!previous_digit) return std::nullopt;
  return negative ? -value : value;
}

// Python's float(text); strtod also reads hexadecimal, which Python does not.
std::optional<double> parse_float(std::string_view text) {
  const std::string trimmed = py::strip(text, std::nullopt, true, true);
  if (trimmed.empty() || trimmed.find_first_of("xX") != std::string::npos) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(trimmed.c_str(), &end);
  if (end != trimmed.c_str() + trimmed.size()) return std::nullopt;
  return value;
}

Value length_of(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::undefined:
      return Value(0);
    case Value::Kind::string:
      return Value(static_cast<int64_t>(py::length(value.string())));
    case Value::Kind::list:
      return Value(static_cast<int64_t>(value.list().size()));
    case Value::Kind::dict:
      return Value(static_cast<int64_t>(value.dict().size()));
    default:
      throw RenderError("object of type '" + std::string(value.type_name()) + "' has no len()");
  }
}

List items_of(const Value& value) {
  if (value.is(Value::Kind::undefined)) return {};
  if (!value.is(Value::Kind::dict)) throw RenderError("Can only get item pairs from a mapping.");
  List items;
  for (const auto& [key, element] : value.dict().items()) items.push_back(Value::tuple(List{Value(key), element}));
  return items;
}

JsonOptions json_options(const Arguments& arguments) {
  JsonOptions options;
  options.ensure_ascii = arguments.flag(0);
  const Value indent = arguments.get_or(1, Value::none());
  if (indent.is(Value::Kind::integer)) {
    options.indent = std::string(static_cast<size_t>(std::max<int64_t>(0, indent.integer())), ' ');
  } else if (indent.is(Value::Kind::string)) {
    options.indent = indent.string();
  } else if (!indent.is(Value::Kind::none)) {
    throw RenderError("tojson: indent must be an integer, a string or none");
  }
  if (options.indent) options.item_separator = ",";
  const Value separators = arguments.get_or(2, Value::none());
  if (!separators.is(Value::Kind::none)) {
    if (!separators.is(Value::Kind::list) || separators.list().size() != 2) {
      throw RenderError("tojson: separators must be a pair of strings");
    }
    options.item_separator = as_string(separators.list()[0], "tojson separators");
    options.key_separator = as_string(separators.list()[1], "tojson separators");
  }
  options.sort_keys = arguments.flag(3);
  return options;
}

// The test a select/reject filter applies: a named test with arguments, or truthiness.
bool passes(const Value& value, const CallArguments& arguments, size_t test_at) {
  if (arguments.positional.size() <= test_at) return truthy(value);
  const std::string& test = as_string(arguments.positional[test_at], "a test name");
  if (!is_test(test)) throw RenderError("no test named '" + test + "'");
  CallArguments rest;
  rest.positional.assign(arguments.positional.begin() + static_cast<std::ptrdiff_t>(test_at) + 1,
                         arguments.positional.end());
  rest.keyword = arguments.keyword;
  return apply_test(test, value, rest);
}

Value select(const Value& operand, const CallArguments& arguments, bool keep, bool by_attribute) {
  List kept;
  std::string attribute;
  if (by_attribute) {
    if (arguments.positional.empty()) throw RenderError("selectattr/rejectattr need an attribute name");
    attribute = as_string(arguments.positional[0], "the attribute name");
  }
  for (const Value& item : iterate(operand)) {
    const Value subject = by_attribute ? attribute_path(item, attribute) : item;
    if (passes(subject, arguments, by_attribute ? 1 : 0) == keep) kept.push_back(item);
  }
  return Value::generator(std::move(kept));
}

Value map_filter(const Value& operand, const CallArguments& arguments) {
  List mapped;
  const List items = iterate(operand);
  if (arguments.positional.empty()) {
    Arguments named(arguments, "map", {"attribute", "default"});
    const Value* attribute = named.get(0);
    if (attribute == nullptr) throw RenderError("map() needs a filter name or attribute=");
    const Value* fallback = named.get(1);
    for (const Value& item : items) {
      Value value = attribute_path(item, as_string(*attribute, "map attribute"));
      if (value.is(Value::Kind::undefined) && fallback != nullptr) value = *fallback;
      mapped.push_back(std::move(value));
    }
    return Value::generator(std::move(mapped));
  }
  const std::string& filter = as_string(arguments.positional[0], "a filter name");
  if (!is_filter(filter)) throw RenderError("no filter named '" + filter + "'");
  CallArguments rest;
  rest.positional.assign(arguments.positional.begin() + 1, arguments.positional.end());
  rest.keyword = arguments.keyword;
  for (const Value& item : items) mapped.push_back(apply_filter(filter, item, rest));
  return Value::generator(std::move(mapped));
}

Value sort_filter(const Value& operand, const CallArguments& call) {
  Arguments arguments(call, "sort", {"reverse", "case_sensitive", "attribute"});
  const bool reverse = arguments.flag(0);
  const bool case_sensitive = arguments.flag(1);
  const std::optional<std::string> attribute = optional_string(arguments.get(2), "sort attribute");
  List items = iterate(operand);
  std::vector<std::pair<Value, Value>> keyed;
  for (Value& item : items) {
    Value key = sort_key(attribute ? attribute_path(item, *attribute) : item, case_sensitive);
    keyed.emplace_back(std::move(key), std::move(item));
  }
  std::stable_sort(keyed.begin(), keyed.end(), [reverse](const auto& a, const auto& b) {
    return reverse ? compare(b.first, a.first) < 0 : compare(a.first, b.first) < 0;
  });
  List sorted;
  for (auto& [key, item] : keyed) sorted.push_back(std::move(item));
  return Value(std::move(sorted));
}

Value dictsort_filter(const Value& operand, const CallArguments& call) {
  if (operand.is(Value::Kind::undefined)) fail_undefined(operand);
  Arguments arguments(call, "dictsort", {"case_sensitive", "by", "reverse"});
  const bool case_sensitive = arguments.flag(0);
  const std::string by = optional_string(arguments.get(1), "dictsort by").value_or("key");
  if (by != "key" && by != "value") throw RenderError("You can only sort by either 'key' or 'value'");
  const bool reverse = arguments.flag(2);
  List items = items_of(operand);
  const size_t position = by == "key" ? 0 : 1;
  std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
    const Value ka = sort_key(a.list()[position], case_sensitive);
    const Value kb = sort_key(b.list()[position], case_sensitive);
    return reverse ? compare(kb, ka) < 0 : compare(ka, kb) < 0;
  });
  return Value(std::move(items));
}

Value extreme(const Value& operand, const CallArguments& call, bool maximum) {
  Arguments arguments(call, maximum ? "max" : "min", {"case_sensitive", "attribute"});
  const bool case_sensitive = arguments.flag(0);
  const std::optional<std::string> attribute = optional_string(arguments.get(1), "attribute");
  const List items = iterate(operand);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  const Value* best = &items.front();
  Value best_key = sort_key(attribute ? attribute_path(*best, *attribute) : *best, case_sensitive);
  for (const Value& item : items) {
    Value key = sort_key(attribute ? attribute_path(item, *attribute) : item, case_sensitive);
    if (maximum ? compare(key, best_key) > 0 : compare(key, best_key) < 0) {
      best = &item;
      best_key = std::move(key);
    }
  }
  return *best;
}

Value unique_filter(const Value& operand, const CallArguments& call) {
  Arguments arguments(call, "unique", {"case_sensitive", "attribute"});
  const bool case_sensitive = arguments.flag(0);
  const std::optional<std::string> attribute = optional_string(arguments.get(1), "attribute");
  List kept;
  List seen;
  for (const Value& item : iterate(operand)) {
    const Value key = sort_key(attribute ? attribute_path(item, *attribute) : item, case_sensitive);
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& other) { return equal(other, key); })) continue;
    seen.push_back(key);
    kept.push_back(item);
  }
  return Value::generator(std::move(kept));
}

Value sum_filter(const Value& operand, const CallArguments& call) {
  Arguments arguments(call, "sum", {"attribute", "start"});
  const std::optional<std::string> attribute = optional_string(arguments.get(0), "attribute");
  Value total = arguments.get_or(1, Value(0));
  for (const Value& item : iterate(operand))
    total = arithmetic("+", total, attribute ? attribute_path(item, *attribute) : item);
  return total;
}

Value indent_filter(const Value& operand, const CallArguments& call) {
  if (operand.is(Value::Kind::undefined)) fail_undefined(operand);
  Arguments arguments(call, "indent", {"width", "first", "blank"});
  const Value width = arguments.get_or(0, Value(4));
  const std::string indentation =
      width.is(Value::Kind::string)
          ? width.string()
          : std::string(static_cast<size_t>(std::max<int64_t>(0, as_integer(width, "indent width"))), ' ');
  const bool first = arguments.flag(1);
  const bool blank = arguments.flag(2);
  const std::vector<std::string> lines = py::splitlines(to_string(operand) + "\n", false);
  std::string out;
  for (size_t index = 0; index < lines.size(); ++index) {
    if (index > 0) out += "\n";
    if (index > 0 && (blank || !lines[index].empty())) out += indentation;
    out += lines[index];
  }
  if (first) out = indentation + out;
  return Value(std::move(out));
}

Value round_filter(const Value& operand, const CallArguments& call) {
  Arguments arguments(call, "round", {"precision", "method"});
  const int64_t precision = as_integer(arguments.get_or(0, Value(0)), "round precision");
  const std::string method = optional_string(arguments.get(1), "round method").value_or("common");
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double value = operand.number() * scale;
  double rounded = 0;
  if (method == "common") {
    rounded = std::nearbyint(value);  // Python's round(): half to even
  } else if (method == "ceil") {
    rounded = std::ceil(value);
  } else if (method == "floor") {
    rounded = std::floor(value);
  } else {
    throw RenderError("method must be common, ceil or floor");
  }
  return Value(rounded / scale);
}

Value int_filter(const Value& operand, const CallArguments& call) {
  if (operand.is(Value::Kind::undefined)) fail_undefined(operand);
  Arguments arguments(call, "int", {"default", "base"});
  const Value fallback = arguments.get_or(0, Value(0));
  const int64_t base = as_integer(arguments.get_or(1, Value(10)), "int base");
  switch (operand.kind()) {
    case Value::Kind::integer:
      return operand;
    case Value::Kind::boolean:
      return Value(int64_t{operand.boolean()});
    case Value::Kind::floating:
      if (!std::isfinite(operand.floating()) || std::fabs(operand.floating()) >= 9.2e18) return fallback;
      return Value(static_cast<int64_t>(std::trunc(operand.floating())));
    case Value::Kind::string: {
      if (base != 0 && (base < 2 || base > 36)) throw RenderError("int() base must be >= 2 and <= 36, or 0");
      if (const std::optional<int64_t> parsed = parse_int(operand.string(), static_cast<int>(base)))
        return Value(*parsed);
      if (const std::optional<double> parsed = parse_float(operand.string());
          parsed && std::isfinite(*parsed) && std::fabs(*parsed) < 9.2e18) {
        return Value(static_cast<int64_t>(std::trunc(*parsed)));
      }
      return fallback;
    }
    default:
      return fallback;
  }
}

Value float_filter(const Value& operand, const CallArguments& call) {
  if (operand.is(Value::Kind::undefined)) fail_undefined(operand);
  Arguments arguments(call, "float", {"default"});
  const Value fallback = arguments.get_or(0, Value(0.0));
  if (operand.is_number()) return Value(operand.number());
  if (operand.is(Value::Kind::string)) {
    if (const std::optional<double> parsed = parse_float(operand.string())) return Value(*parsed);
  }
  return fallback;
}

Value first_or_last(const Value& operand, bool last) {
  if (operand.is(Value::Kind::string)) {
    const std::u32string points = py::code_points(operand.string());
    if (points.empty()) return Value::undefined("the string is empty");
    return Value(py::utf8(std::u32string(1, last ? points.back() : points.front())));
  }
  if (last && operand.is(Value::Kind::generator)) throw RenderError("'generator' object is not reversible");
  const List items = iterate(operand);
  if (items.empty())
    return Value::undefined(std::string("No ") + (last ? "last" : "first") + " item, sequence was empty.");
  return last ? items.back() : items.front();
}

Value join_filter(const Value& operand, const CallArguments& call) {
  Arguments arguments(call, "join", {"d", "attribute"});
  const std::string separator = to_string(arguments.get_or(0, Value("")));
  const std::optional<std::string> attribute = optional_string(arguments.get(1), "join attribute");
  std::string out;
  bool first = true;
  for (const Value& item : iterate(operand)) {
    if (!first) out += separator;
    first = false;
    out += to_string(attribute ? attribute_path(item, *attribute) : item);
  }
  return Value(std::move(out));
}

Value list_filter(const Value& operand) { return Value(iterate(operand)); }

Value reverse_filter(const Value& operand) {
  if (operand.is(Value::Kind::string)) {
    std::u32string points = py::code_points(operand.string());
    std::reverse(points.begin(), points.end());
    return Value(py::utf8(points));
  }
  if (operand.is(Value::Kind::generator)) throw RenderError("'generator' object is not reversible");
  List items = iterate(operand);
  std::reverse(items.begin(), items.end());
  // Python's reversed() is an iterator too.
  return Value::generator(std::move(items));
}

Value replace_filter(const Value& operand, const CallArguments& call) {
  Arguments arguments(call, "replace", {"old", "new", "count"});
  const std::string text = to_string(operand);
  const Value count = arguments.get_or(2, Value::none());
  return Value(py::replace(text, to_string(arguments.required(0, "replace")),
                           to_string(arguments.required(1, "replace")),
                           count.is(Value::Kind::none) ? -1 : as_integer(count, "replace count")));
}

Value trim_filter(const Value& operand, const CallArguments& call) {
  Arguments arguments(call, "trim", {"chars"});
  return Value(py::strip(to_string(operand), optional_string(arguments.get(0), "trim chars"), true, true));
}

Value tojson_filter(const Value& operand, const CallArguments& call) {
  return Value(
      to_json(operand, json_options(Arguments(call, "tojson", {"ensure_ascii", "indent", "separators", "sort_keys"}))));
}

Value default_filter(const Value& operand, const CallArguments& call) {
  Arguments arguments(call, "default", {"default_value", "boolean"});
  const bool replace = operand.is(Value::Kind::undefined) || (arguments.flag(1) && !truthy(operand));
  return replace ? arguments.get_or(0, Value("")) : operand;
}

Value abs_filter(const Value& operand) {
  if (operand.is(Value::Kind::floating)) return Value(std::fabs(operand.floating()));
  const int64_t value = as_integer(operand, "abs() operand");
  if (value == INT64_MIN) throw RenderError("integer overflow in abs()");
  return Value(value < 0 ? -value : value);
}

Value wordcount_filter(const Value& operand) {
  // Jinja counts \w+ runs: letters, digits and underscores.
  int64_t words = 0;
  bool in_word = false;
  for (const char32_t c : py::code_points(to_string(operand))) {
    const std::string piece = py::utf8(std::u32string(1, c));
    const bool word = c == '_' || py::is_alnum(piece);
    if (word && !in_word) ++words;
    in_word = word;
  }
  return Value(words);
}

using Filter = std::function<Value(const Value&, const CallArguments&)>;

const std::map<std::string, Filter, std::less<>>& filters() {
  static const std::map<std::string, Filter, std::less<>> table = [] {
    std::map<std::string, Filter, std::less<>> t;
    const auto string_map = [](std::string (*function)(std::string_view)) {
      return [function](const Value& operand, const CallArguments&) { return Value(function(to_string(operand))); };
    };
    t["abs"] = [](const Value& v, const CallArguments&) { return abs_filter(v); };
    t["attr"] = [](const Value& v, const CallArguments& a) {
      return attribute_of(v, as_string(Arguments(a, "attr", {"name"}).required(0, "attr"), "attr name"));
    };
    t["capitalize"] = string_map(py::capitalize);
    t["count"] = [](const Value& v, const CallArguments&) { return length_of(v); };
    t["default"] = default_filter;
    t["d"] = default_filter;
    t["dictsort"] = dictsort_filter;
    t["escape"] = [](const Value& v, const CallArguments&) { return Value(html_escape(to_string(v))); };
    t["e"] = t["escape"];
    t["first"] = [](const Value& v, const CallArguments&) { return first_or_last(v, false); };
    t["float"] = float_filter;
    t["indent"] = indent_filter;
    t["int"] = int_filter;
    t["items"] = [](const Value& v, const CallArguments&) { return Value::generator(items_of(v)); };
    t["join"] = join_filter;
    t["last"] = [](const Value& v, const CallArguments&) { return first_or_last(v, true); };
    t["length"] = [](const Value& v, const CallArguments&) { return length_of(v); };
    t["list"] = [](const Value& v, const CallArguments&) { return list_filter(v); };
    t["lower"] = string_map(py::lower);
    t["map"] = map_filter;
    t["max"] = [](const Value& v, const CallArguments& a) { return extreme(v, a, true); };
    t["min"] = [](const Value& v, const CallArguments& a) { return extreme(v, a, false); };
    t["reject"] = [](const Value& v, const CallArguments& a) { return select(v, a, false, false); };
    t["rejectattr"] = [](const Value& v, const CallArguments& a) { return select(v, a, false, true); };
    t["replace"] = replace_filter;
    t["reverse"] = [](const Value& v, const CallArguments&) { return reverse_filter(v); };
    t["round"] = round_filter;
    t["safe"] = [](const Value& v, const CallArguments&) { return v; };
    t["select"] = [](const Value& v, const CallArguments& a) { return select(v, a, true, false); };
    t["selectattr"] = [](const Value& v, const CallArguments& a) { return select(v, a, true, true); };
    t["sort"] = sort_filter;
    t["string"] = [](const Value& v, const CallArguments&) { return Value(to_string(v)); };
    t["sum"] = sum_filter;
    t["title"] = string_map(py::title);
    t["tojson"] = tojson_filter;
    t["trim"] = trim_filter;
    t["unique"] = unique_filter;
    t["upper"] = string_map(py::upper);
    t["wordcount"] = [](const Value& v, const CallArguments&) { return wordcount_filter(v); };
    return t;
  }();
  return table;
}

using Test = std::function<bool(const Value&, const CallArguments&)>;

const Value& single_argument(const CallArguments& arguments, std::string_view test) {
  if (arguments.positional.size() != 1 || !arguments.keyword.empty()) {
    throw RenderError("the test '" + std::string(test) + "' takes one argument");
  }
  return arguments.positional[0];
}

const std::map<std::string, Test, std::less<>>& tests() {
  static const std::map<std::string, Test, std::less<>> table = [] {
    std::map<std::string, Test, std::less<>> t;
    using K = Value::Kind;
    const auto kind_test = [](std::initializer_list<K> kinds) {
      std::vector<K> accepted(kinds);
      return [accepted](const Value& v, const CallArguments&) {
        return std::find(accepted.begin(), accepted.end(), v.kind()) != accepted.end();
      };
    };
    const auto comparison = [](std::string_view name, std::function<bool(int)> holds) {
      return
          [name, holds](const Value& v, const CallArguments& a) { return holds(compare(v, single_argument(a, name))); };
    };
    t["defined"] = [](const Value& v, const CallArguments&) { return !v.is(K::undefined); };
    t["undefined"] = kind_test({K::undefined});
    t["none"] = kind_test({K::none});
    t["boolean"] = kind_test({K::boolean});
    t["true"] = [](const Value& v, const CallArguments&) { return v.is(K::boolean) && v.boolean(); };
    t["false"] = [](const Value& v, const CallArguments&) { return v.is(K::boolean) && !v.boolean(); };
    t["integer"] = kind_test({K::integer});
    t["float"] = kind_test({K::floating});
    t["number"] = kind_test({K::integer, K::floating, K::boolean});
    t["string"] = kind_test({K::string});
    t["mapping"] = kind_test({K::dict});
    // Jinja's Undefined is iterable (as empty) and passes its sequence test (it has __len__ and
    // __getitem__), which templates' `content is iterable` branches rely on.
    t["iterable"] = kind_test({K::undefined, K::string, K::list, K::dict, K::generator});
    t["sequence"] = kind_test({K::undefined, K::string, K::list, K::dict});
    t["callable"] = kind_test({K::undefined, K::callable});  // Jinja's Undefined has __call__
    t["escaped"] = [](const Value&, const CallArguments&) { return false; };
    t["lower"] = [](const Value& v, const CallArguments&) { return py::is_lower(to_string(v)); };
    t["upper"] = [](const Value& v, const CallArguments&) { return py::is_upper(to_string(v)); };
    t["odd"] = [](const Value& v, const CallArguments&) { return as_integer(v, "odd operand") % 2 != 0; };
    t["even"] = [](const Value& v, const CallArguments&) { return as_integer(v, "even operand") % 2 == 0; };
    t["divisibleby"] = [](const Value& v, const CallArguments& a) {
      const int64_t divisor = as_integer(single_argument(a, "divisibleby"), "divisibleby argument");
      if (divisor == 0) throw RenderError("integer division or modulo by zero");
      return as_integer(v, "divisibleby operand") % divisor == 0;
    };
    t["eq"] = [](const Value& v, const CallArguments& a) { return equal(v, single_argument(a, "eq")); };
    t["equalto"] = t["eq"];
    t["=="] = t["eq"];
    t["ne"] = [](const Value& v, const CallArguments& a) { return !equal(v, single_argument(a, "ne")); };
    t["!="] = t["ne"];
    t["lt"] = comparison("lt", [](int order) { return order < 0; });
    t["lessthan"] = t["lt"];
    t["<"] = t["lt"];
    t["le"] = comparison("le", [](int order) { return order <= 0; });
    t["<="] = t["le"];
    t["gt"] = comparison("gt", [](int order) { return order > 0; });
    t["greaterthan"] = t["gt"];
    t[">"] = t["gt"];
    t["ge"] = comparison("ge", [](int order) { return order >= 0; });
    t[">="] = t["ge"];
    t["in"] = [](const Value& v, const CallArguments& a) { return contains(single_argument(a, "in"), v); };
    t["sameas"] = [](const Value& v, const CallArguments& a) {
      const Value& other = single_argument(a, "sameas");
      if (v.kind() != other.kind()) return false;
      if (v.is(K::none) || v.is(K::boolean) || v.is(K::integer) || v.is(K::string)) return equal(v, other);
      return false;
    };
    t["filter"] = [](const Value& v, const CallArguments&) { return v.is(K::string) && is_filter(v.string()); };
    t["test"] = [](const Value& v, const CallArguments&) { return v.is(K::string) && is_test(v.string()); };
    return t;
  }();
  return table;
}

std::optional<Value> string_method(const std::string& text, std::string_view name, const CallArguments& call) {
  const auto affix = [&](bool prefix) {
    Arguments arguments(call, name, {"prefix"});
    const Value& wanted = arguments.required(0, name);
    const auto matches = [&](const Value& candidate) {
      const std::string& affix_text = as_string(candidate, std::string(name) + " argument");
      return prefix ? text.starts_with(affix_text) : text.ends_with(affix_text);
    };
    if (wanted.is(Value::Kind::list)) {
      return Value(std::any_of(wanted.list().begin(), wanted.list().end(), matches));
    }
    return Value(matches(wanted));
  };
  if (name == "startswith") return affix(true);
  if (name == "endswith") return affix(false);
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    Arguments arguments(call, name, {"chars"});
    return Value(py::strip(text, optional_string(arguments.get(0), "strip chars"), name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    Arguments arguments(call, name, {"sep", "maxsplit"});
    return string_list(py::split(text, optional_string(arguments.get(0), "split separator"),
                                 as_integer(arguments.get_or(1, Value(-1)), "maxsplit"), name == "rsplit"));
  }
  if (name == "splitlines") {
    Arguments arguments(call, name, {"keepends"});
    return string_list(py::splitlines(text, arguments.flag(0)));
  }
  if (name == "upper" || name == "lower" || name == "capitalize" || name == "title") {
    Arguments arguments(call, name, {});
    return Value(name == "upper"        ? py::upper(text)
                 : name == "lower"      ? py::lower(text)
                 : name == "capitalize" ? py::capitalize(text)
                                        : py::title(text));
  }
  if (name == "replace") {
    Arguments arguments(call, name, {"old", "new", "count"});
    return Value(py::replace(text, as_string(arguments.required(0, name), "replace old"),
                             as_string(arguments.required(1, name), "replace new"),
                             as_integer(arguments.get_or(2, Value(-1)), "replace count")));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    Arguments arguments(call, name, {"sub"});
    const std::string& needle = as_string(arguments.required(0, name), std::string(name) + " argument");
    if (name == "count") return Value(py::count(text, needle));
    const int64_t at = py::find(text, needle, name == "rfind" || name == "rindex");
    if (at < 0 && (name == "index" || name == "rindex")) throw RenderError("substring not found");
    return Value(at);
  }
  if (name == "join") {
    Arguments arguments(call, name, {"iterable"});
    std::string out;
    bool first = true;
    for (const Value& item : iterate(arguments.required(0, name))) {
      if (!first) out += text;
      first = false;
      out += as_string(item, "join item");
    }
    return Value(std::move(out));
  }
  if (name == "removeprefix" || name == "removesuffix") {
    Arguments arguments(call, name, {"affix"});
    const std::string& affix_text = as_string(arguments.required(0, name), std::string(name) + " argument");
    if (name == "removeprefix" && text.starts_with(affix_text)) return Value(text.substr(affix_text.size()));
    if (name == "removesuffix" && text.ends_with(affix_text))
      return Value(text.substr(0, text.size() - affix_text.size()));
    return Value(text);
  }
  using Predicate = bool (*)(std::string_view);
  static const std::map<std::string, Predicate, std::less<>> predicates = {
      {"isspace", py::is_space},   {"isalpha", py::is_alpha}, {"isdigit", py::is_digit}, {"isdecimal", py::is_digit},
      {"isnumeric", py::is_digit}, {"isalnum", py::is_alnum}, {"isupper", py::is_upper}, {"islower", py::is_lower}};
  if (const auto found = predicates.find(name); found != predicates.end()) {
    Arguments arguments(call, name, {});
    return Value(found->second(text));
  }
  return std::nullopt;
}

std::optional<Value> dict_method(const Dict& dict, std::string_view name, const CallArguments& call) {
  if (name == "get") {
    Arguments arguments(call, name, {"key", "default"});
    const Value& key = arguments.required(0, name);
    if (key.is(Value::Kind::string)) {
      if (const Value* found = dict.find(key.string())) return *found;
    }
    return arguments.get_or(1, Value::none());
  }
  if (name == "items" || name == "keys" || name == "values") {
    Arguments arguments(call, name, {});
    List list;
    for (const auto& [key, value] : dict.items()) {
      list.push_back(name == "items" ? Value::tuple(List{Value(key), value}) : name == "keys" ? Value(key) : value);
    }
    return Value(std::move(list));
  }
  return std::nullopt;
}

std::optional<Value> list_method(const List& list, std::string_view name, const CallArguments& call) {
  if (name == "index" || name == "count") {
    Arguments arguments(call, name, {"value"});
    const Value& wanted = arguments.required(0, name);
    int64_t found = 0;
    for (size_t index = 0; index < list.size(); ++index) {
      if (!equal(list[index], wanted)) continue;
      if (name == "index") return Value(static_cast<int64_t>(index));
      ++found;
    }
    if (name == "index") throw RenderError("the value is not in the list");
    return Value(found);
  }
  if (name == "append" || name == "extend" || name == "pop" || name == "insert" || name == "remove" ||
      name == "clear" || name == "sort" || name == "reverse") {
    throw RenderError("access to attribute '" + std::string(name) + "' of 'list' object is unsafe.");
  }
  return std::nullopt;
}

Value range_function(const CallArguments& call) {
  if (!call.keyword.empty() || call.positional.empty() || call.positional.size() > 3) {
    throw RenderError("range() takes 1 to 3 integer arguments");
  }
  int64_t start = 0;
  int64_t stop = 0;
  int64_t step = 1;
  if (call.positional.size() == 1) {
    stop = as_integer(call.positional[0], "range argument");
  } else {
    start = as_integer(call.positional[0], "range argument");
    stop = as_integer(call.positional[1], "range argument");
    if (call.positional.size() == 3) step = as_integer(call.positional[2], "range argument");
  }
  if (step == 0) throw RenderError("range() arg 3 must not be zero");
  // The length first (unsigned, so no bound overflows): range(10**18) is refused before anything is built.
  const auto unsigned_of = [](int64_t value) { return static_cast<uint64_t>(value); };
  const uint64_t distance = step > 0 ? (stop > start ? unsigned_of(stop) - unsigned_of(start) : 0)
                                     : (start > stop ? unsigned_of(start) - unsigned_of(stop) : 0);
  const uint64_t stride = step > 0 ? unsigned_of(step) : uint64_t{0} - unsigned_of(step);
  const uint64_t count = distance == 0 ? 0 : (distance - 1) / stride + 1;
  if (count > kMaxBuiltSize) throw RenderError("range() is too long for a template");
  List list;
  list.reserve(static_cast<size_t>(count));
  for (uint64_t index = 0; index < count; ++index) list.push_back(Value(start + static_cast<int64_t>(index) * step));
  return Value(std::move(list));
}

Value strftime_now(const CallArguments& call) {
  Arguments arguments(call, "strftime_now", {"format"});
  const std::string& format = as_string(arguments.required(0, "strftime_now"), "the strftime_now format");
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm local{};
  localtime_r(&now, &local);
  std::string out(256, '\0');
  const size_t written = std::strftime(out.data(), out.size(), format.c_str(), &local);
  if (written == 0 && !format.empty()) throw RenderError("strftime_now: the format is too long or empty in output");
  out.resize(written);
  return Value(std::move(out));
}

Value dict_function(const CallArguments& call) {
  Dict dict;
  if (call.positional.size() > 1) throw RenderError("dict expected at most 1 argument");
  if (!call.positional.empty()) {
    const Value& source = call.positional[0];
    if (source.is(Value::Kind::dict)) {
      dict = source.dict();
    } else {
      for (const Value& pair : iterate(source)) {
        const List items = iterate(pair);
        if (items.size() != 2) throw RenderError("dict() needs pairs");
        dict.set(as_string(items[0], "a dict key"), items[1]);
      }
    }
  }
  for (const auto& [name, value] : call.keyword) dict.set(name, value);
  return Value(std::move(dict));
}

// Python's slice.indices(length).
struct SliceRange {
  int64_t start;
  int64_t step;
  int64_t count;
};
SliceRange slice_range(int64_t length, const Value& start_value, const Value& stop_value, const Value& step_value) {
  const int64_t step = step_value.is(Value::Kind::none) ? 1 : as_integer(step_value, "a slice step");
  if (step == 0) throw RenderError("slice step cannot be zero");
  const auto adjust = [&](const Value& bound, int64_t when_none) {
    if (bound.is(Value::Kind::none)) return when_none;
    int64_t value = as_integer(bound, "a slice index");
    if (value < 0) {
      value += length;
      if (value < 0) value = step < 0 ? -1 : 0;
    } else if (value >= length) {
      value = step < 0 ? length - 1 : length;
    }
    return value;
  };
  const int64_t start = adjust(start_value, step < 0 ? length - 1 : 0);
  const int64_t stop = adjust(stop_value, step < 0 ? -1 : length);
  int64_t count = 0;
  if (step > 0 && start < stop) count = (stop - start - 1) / step + 1;
  if (step < 0 && stop < start) count = (start - stop - 1) / (-step) + 1;
  return {start, step, count};
}

// Python ints do not overflow; ours are 64-bit and refuse to.
int64_t checked_add(int64_t a, int64_t b) {
  int64_t result = 0;
  if (__builtin_add_overflow(a, b, &result)) throw RenderError("integer overflow");
  return result;
}
int64_t checked_sub(int64_t a, int64_t b) {
  int64_t result = 0;
  if (__builtin_sub_overflow(a, b, &result)) throw RenderError("integer overflow");
  return result;
}
int64_t checked_mul(int64_t a, int64_t b) {
  int64_t result = 0;
  if (__builtin_mul_overflow(a, b, &result)) throw RenderError("integer overflow");
  return result;
}

[[noreturn]] void unsupported_operands(std::string_view op, const Value& left, const Value& right) {
  throw RenderError("unsupported operand type(s) for " + std::string(op) + ": '" + std::string(left.type_name()) +
                    "' and '" + std::string(right.type_name()) + "'");
}

Value repeat(const Value& sequence, int64_t times) {
  if (times <= 0) return sequence.is(Value::Kind::string) ? Value("") : Value(List{});
  const size_t unit = sequence.is(Value::Kind::string) ? sequence.string().size() : sequence.list().size();
  if (unit != 0 && static_cast<uint64_t>(times) > kMaxBuiltSize / unit)
    throw RenderError("a repetition is too large for a template");
  if (sequence.is(Value::Kind::string)) {
    std::string out;
    for (int64_t i = 0; i < times; ++i) out += sequence.string();
    return Value(std::move(out));
  }
  List out;
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), sequence.list().begin(), sequence.list().end());
  return Value(std::move(out));
}

}  // namespace

[[noreturn]] void fail_undefined(const Value& undefined) {
  throw RenderError(undefined.undefined_hint().empty() ? "a value is undefined" : undefined.undefined_hint());
}

bool is_filter(std::string_view name) { return filters().contains(name); }
bool is_test(std::string_view name) { return tests().contains(name); }

Value apply_filter(std::string_view name, const Value& operand, const CallArguments& arguments) {
  const auto found = filters().find(name);
  if (found == filters().end()) throw RenderError("no filter named '" + std::string(name) + "'");
  // An undefined operand reaches the filter, which treats it as Jinja's Undefined does: "" as a
  // string, empty as a sequence, an error where a number or JSON is needed.
  return found->second(operand, arguments);
}

bool apply_test(std::string_view name, const Value& operand, const CallArguments& arguments) {
  const auto found = tests().find(name);
  if (found == tests().end()) throw RenderError("no test named '" + std::string(name) + "'");
  return found->second(operand, arguments);
}

std::optional<Value> call_method(const Value& object, std::string_view name, const CallArguments& arguments) {
  switch (object.kind()) {
    case Value::Kind::string:
      return string_method(object.string(), name, arguments);
    case Value::Kind::dict:
      return dict_method(object.dict(), name, arguments);
    case Value::Kind::list:
      return list_method(object.list(), name, arguments);
    default:
      return std::nullopt;
  }
}

std::optional<Value> global(std::string_view name) {
  const auto function = [](std::string function_name, std::function<Value(CallArguments)> call) {
    return Value(std::make_shared<const Callable>(Callable{std::move(function_name), std::move(call)}));
  };
  if (name == "raise_exception") {
    return function("raise_exception", [](CallArguments call) -> Value {
      throw RenderError(call.positional.empty() ? std::string() : to_string(call.positional[0]));
    });
  }
  if (name == "range") return function("range", [](CallArguments call) { return range_function(call); });
  if (name == "dict") return function("dict", [](CallArguments call) { return dict_function(call); });
  if (name == "strftime_now") return function("strftime_now", [](CallArguments call) { return strftime_now(call); });
  return std::nullopt;
}

Value attribute_of(const Value& object, std::string_view name) {
  switch (object.kind()) {
    case Value::Kind::undefined:
      fail_undefined(object);
    case Value::Kind::dict:
      if (const Value* found = object.dict().find(name)) return *found;
      break;
    case Value::Kind::name_space:
      if (const Value* found = object.name_space().attributes.find(name)) return *found;
      break;
    default:
      break;
  }
  return undefined_attribute(object, name);
}

Value item_of(const Value& object, const Value& key) {
  switch (object.kind()) {
    case Value::Kind::undefined:
      fail_undefined(object);
    case Value::Kind::dict:
      if (key.is(Value::Kind::string)) {
        if (const Value* found = object.dict().find(key.string())) return *found;
      }
      break;
    case Value::Kind::list:
    case Value::Kind::string: {
      if (!key.is(Value::Kind::integer) && !key.is(Value::Kind::boolean)) break;
      int64_t index = as_integer(key, "an index");
      if (object.is(Value::Kind::list)) {
        const auto size = static_cast<int64_t>(object.list().size());
        if (index < 0) index += size;
        if (index >= 0 && index < size) return object.list()[static_cast<size_t>(index)];
      } else {
        const std::u32string points = py::code_points(object.string());
        const auto size = static_cast<int64_t>(points.size());
        if (index < 0) index += size;
        if (index >= 0 && index < size) return Value(py::utf8(std::u32string(1, points[static_cast<size_t>(index)])));
      }
      return Value::undefined("'" + std::string(object.type_name()) + " object' has no element " +
                              std::to_string(as_integer(key, "an index")));
    }
    case Value::Kind::name_space:
      if (key.is(Value::Kind::string)) return attribute_of(object, key.string());
      break;
    default:
      break;
  }
  return Value::undefined("'" + std::string(object.type_name()) + " object' has no element " + repr(key));
}

Value slice_of(const Value& object, const Value& start, const Value& stop, const Value& step) {
  if (object.is(Value::Kind::undefined)) fail_undefined(object);
  if (object.is(Value::Kind::list)) {
    const List& list = object.list();
    const SliceRange range = slice_range(static_cast<int64_t>(list.size()), start, stop, step);
    List out;
    for (int64_t i = 0; i < range.count; ++i) out.push_back(list[static_cast<size_t>(range.start + i * range.step)]);
    return Value(std::move(out));
  }
  if (object.is(Value::Kind::string)) {
    const std::u32string points = py::code_points(object.string());
    const SliceRange range = slice_range(static_cast<int64_t>(points.size()), start, stop, step);
    std::u32string out;
    for (int64_t i = 0; i < range.count; ++i) out.push_back(points[static_cast<size_t>(range.start + i * range.step)]);
    return Value(py::utf8(out));
  }
  throw RenderError("'" + std::string(object.type_name()) + "' object is not subscriptable");
}

Value arithmetic(std::string_view op, const Value& left, const Value& right) {
  if (left.is(Value::Kind::undefined)) fail_undefined(left);
  if (right.is(Value::Kind::undefined)) fail_undefined(right);
  const bool integers = (left.is(Value::Kind::integer) || left.is(Value::Kind::boolean)) &&
                        (right.is(Value::Kind::integer) || right.is(Value::Kind::boolean));
  const bool numbers = left.is_number() && right.is_number();
  if (op == "+") {
    if (integers) return Value(checked_add(as_integer(left, ""), as_integer(right, "")));
    if (numbers) return Value(left.number() + right.number());
    if (left.is(Value::Kind::string) && right.is(Value::Kind::string)) return Value(left.string() + right.string());
    if (left.is(Value::Kind::list) && right.is(Value::Kind::list)) {
      List joined = left.list();
      joined.insert(joined.end(), right.list().begin(), right.list().end());
      return Value(std::move(joined));
    }
    if (left.is(Value::Kind::string)) {
      throw RenderError("can only concatenate str (not \"" + std::string(right.type_name()) + "\") to str");
    }
    unsupported_operands(op, left, right);
  }
  if (op == "-") {
    if (integers) return Value(checked_sub(as_integer(left, ""), as_integer(right, "")));
    if (numbers) return Value(left.number() - right.number());
    unsupported_operands(op, left, right);
  }
  if (op == "*") {
    if (integers) return Value(checked_mul(as_integer(left, ""), as_integer(right, "")));
    if (numbers) return Value(left.number() * right.number());
    const bool left_sequence = left.is(Value::Kind::string) || left.is(Value::Kind::list);
    const bool right_sequence = right.is(Value::Kind::string) || right.is(Value::Kind::list);
    if (left_sequence && (right.is(Value::Kind::integer) || right.is(Value::Kind::boolean)))
      return repeat(left, as_integer(right, ""));
    if (right_sequence && (left.is(Value::Kind::integer) || left.is(Value::Kind::boolean)))
      return repeat(right, as_integer(left, ""));
    unsupported_operands(op, left, right);
  }
  if (!numbers) {
    if (op == "%" && left.is(Value::Kind::string))
      throw RenderError("unsupported construct: printf-style string formatting");
    unsupported_operands(op, left, right);
  }
  if (op == "/") {
    if (right.number() == 0) throw RenderError("division by zero");
    return Value(left.number() / right.number());
  }
  if (op == "//" || op == "%") {
    if (integers) {
      const int64_t a = as_integer(left, "");
      const int64_t b = as_integer(right, "");
      if (b == 0) throw RenderError("integer division or modulo by zero");
      if (a == INT64_MIN && b == -1) throw RenderError("integer overflow");
      int64_t quotient = a / b;
      int64_t remainder = a % b;
      if (remainder != 0 && ((remainder < 0) != (b < 0))) {
        --quotient;
        remainder += b;
      }
      return Value(op == "//" ? quotient : remainder);
    }
    const double a = left.number();
    const double b = right.number();
    if (b == 0) throw RenderError(op == "//" ? "float floor division by zero" : "float modulo");
    if (op == "//") return Value(std::floor(a / b));
    double remainder = std::fmod(a, b);
    if (remainder != 0 && ((remainder < 0) != (b < 0))) remainder += b;
    return Value(remainder);
  }
  if (op == "**") {
    if (integers && as_integer(right, "") >= 0) {
      int64_t base = as_integer(left, "");
      int64_t exponent = as_integer(right, "");
      int64_t result = 1;
      while (exponent > 0) {
        if ((exponent & 1) != 0) result = checked_mul(result, base);
        exponent >>= 1;
        if (exponent > 0) base = checked_mul(base, base);
      }
      return Value(result);
    }
    if (left.number() == 0 && right.number() < 0) throw RenderError("0.0 cannot be raised to a negative power");
    return Value(std::pow(left.number(), right.number()));
  }
  throw RenderError("unknown operator " + std::string(op));
}

bool contains(const Value& haystack, const Value& needle) {
  switch (haystack.kind()) {
    case Value::Kind::undefined:
      return false;
    case Value::Kind::string:
      if (!needle.is(Value::Kind::string)) {
        throw RenderError("'in <string>' requires string as left operand, not " + std::string(needle.type_name()));
      }
      return haystack.string().find(needle.string()) != std::string::npos;
    case Value::Kind::list:
      return std::any_of(haystack.list().begin(), haystack.list().end(),
                         [&](const Value& item) { return equal(item, needle); });
    case Value::Kind::dict:
      return needle.is(Value::Kind::string) && haystack.dict().find(needle.string()) != nullptr;
    case Value::Kind::generator: {
      const List items = iterate(haystack);
      return std::any_of(items.begin(), items.end(), [&](const Value& item) { return equal(item, needle); });
    }
    default:
      throw RenderError("argument of type '" + std::string(haystack.type_name()) + "' is not iterable");
  }
}

List iterate(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::undefined:
      return {};
    case Value::Kind::list:
      return value.list();
    case Value::Kind::dict: {
      List keys;
      for (const auto& [key, element] : value.dict().items()) keys.push_back(Value(key));
      return keys;
    }
    case Value::Kind::generator: {
      Generator& generator = value.generator();
      if (generator.consumed) return {};
      generator.consumed = true;
      return std::move(generator.items);
    }
    case Value::Kind::string: {
      List characters;
      for (const char32_t c : py::code_points(value.string()))
        characters.push_back(Value(py::utf8(std::u32string(1, c))));
      return characters;
    }
    default:
      throw RenderError("'" + std::string(value.type_name()) + "' object is not iterable");
  }
}

}  // namespace s1::text::jinja
