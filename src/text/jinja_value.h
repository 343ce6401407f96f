#pragma once
// The values a chat template computes with: Jinja's undefined, the JSON types a conversation is made
// of (none, bool, int, float, string, list, dict), namespace objects and callables (macros). Lists
// and dicts are immutable once built (Transformers renders in an ImmutableSandboxedEnvironment, so a
// template cannot append to them), which lets a copy share its elements; a namespace is the one
// mutable object, shared by every copy as a Python reference is.
//
// The operations follow Python, whose semantics the templates rely on: truthiness, ==, ordering,
// str() and repr() (a list renders as "['a', 1]"), and json.dumps for the tojson filter.

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace s1::text::jinja {

// What the template cannot render: its own raise_exception(message), a type error, an undefined
// value used where one is needed. The message is the one Python's jinja2 would give where the
// template's author wrote it (raise_exception), and a description otherwise.
class RenderError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

class Value;
class Dict;
struct Namespace;
struct Callable;
struct Generator;
using List = std::vector<Value>;

struct Undefined {
  std::string hint;  // why it is undefined ("'x' is undefined"), the message of its errors
};

class Value {
 public:
  enum class Kind { undefined, none, boolean, integer, floating, string, list, dict, name_space, callable, generator };

  Value() : data_(Undefined{}) {}
  static Value undefined(std::string hint) { return Value(Data(Undefined{std::move(hint)})); }
  static Value none() { return Value(Data(nullptr)); }
  Value(bool value) : data_(value) {}
  Value(int64_t value) : data_(value) {}
  Value(int value) : data_(int64_t{value}) {}
  Value(double value) : data_(value) {}
  Value(std::string value) : data_(std::move(value)) {}
  Value(const char* value) : data_(std::string(value)) {}
  Value(List value);
  // A Python tuple: a list that repr() writes in parentheses and that == only another tuple.
  static Value tuple(List value);
  Value(Dict value);
  Value(std::shared_ptr<Namespace> value) : data_(std::move(value)) {}
  Value(std::shared_ptr<const Callable> value) : data_(std::move(value)) {}
  Value(std::shared_ptr<Generator> value) : data_(std::move(value)) {}
  static Value generator(List items);

  // JSON into values (objects keep their key order); nlohmann's unsigned numbers beyond int64 and
  // binary values are refused.
  static Value from_json(const nlohmann::ordered_json& json);

  Kind kind() const { return static_cast<Kind>(data_.index()); }
  bool is(Kind kind) const { return this->kind() == kind; }
  bool is_number() const { return is(Kind::integer) || is(Kind::floating) || is(Kind::boolean); }

  bool boolean() const { return std::get<bool>(data_); }
  int64_t integer() const { return std::get<int64_t>(data_); }
  double floating() const { return std::get<double>(data_); }
  // An int, float or bool as a double (Python's bool is an int).
  double number() const;
  const std::string& string() const { return std::get<std::string>(data_); }
  const List& list() const { return *std::get<std::shared_ptr<const List>>(data_); }
  bool is_tuple() const { return tuple_; }
  const Dict& dict() const { return *std::get<std::shared_ptr<const Dict>>(data_); }
  Namespace& name_space() const { return *std::get<std::shared_ptr<Namespace>>(data_); }
  const Callable& callable() const { return *std::get<std::shared_ptr<const Callable>>(data_); }
  Generator& generator() const { return *std::get<std::shared_ptr<Generator>>(data_); }
  const std::string& undefined_hint() const { return std::get<Undefined>(data_).hint; }

  // Python's type name (for error messages): 'str', 'int', 'list', 'dict', ...
  std::string_view type_name() const;

 private:
  using Data = std::variant<Undefined, std::nullptr_t, bool, int64_t, double, std::string, std::shared_ptr<const List>,
                            std::shared_ptr<const Dict>, std::shared_ptr<Namespace>, std::shared_ptr<const Callable>,
                            std::shared_ptr<Generator>>;
  explicit Value(Data data) : data_(std::move(data)) {}
  Data data_;
  bool tuple_ = false;
};

// An insertion-ordered dict with string keys (the JSON shape; a template's own dict literals are
// checked to have string keys).
class Dict {
 public:
  const Value* find(std::string_view key) const;
  void set(std::string key, Value value);
  // set() for a key known to be new (no search).
  void add(std::string key, Value value) { items_.emplace_back(std::move(key), std::move(value)); }
  void reserve(size_t size) { items_.reserve(size); }
  const std::vector<std::pair<std::string, Value>>& items() const { return items_; }
  size_t size() const { return items_.size(); }

 private:
  std::vector<std::pair<std::string, Value>> items_;
};

struct Namespace {
  Dict attributes;
};

// What Jinja's map, select, reject, selectattr, rejectattr, unique and items filters return: a
// Python generator, iterable once, always true, with no len() and no text form.
struct Generator {
  List items;
  bool consumed = false;
};

struct CallArguments {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

struct Callable {
  std::string name;
  std::function<Value(CallArguments)> call;
};

// Python's bool(value); an undefined value is false.
bool truthy(const Value& value);
// Python's ==, with Jinja's undefined equal only to undefined.
bool equal(const Value& left, const Value& right);
// Python's <, ==, > as -1, 0, 1 for numbers, strings and lists; a RenderError for other pairs.
int compare(const Value& left, const Value& right);
// str(value) as Jinja writes a value into the output: undefined is "", None "None", a list its repr.
std::string to_string(const Value& value);
// repr(value): strings quoted as Python quotes them.
std::string repr(const Value& value);
// Python's float repr ("1.0", "1e-05", "0.1").
std::string float_repr(double value);

struct JsonOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // json.dumps' indent, as the string one level adds
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
};
// json.dumps(value, ...) as Transformers' tojson filter calls it.
std::string to_json(const Value& value, const JsonOptions& options);

}  // namespace s1::text::jinja
