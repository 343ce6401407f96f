#pragma once
// Jinja's built-in filters and tests, the global functions of Transformers' chat-template
// environment (raise_exception, strftime_now, namespace, dict, range) and the Python methods of
// str, dict and list values that templates call (content.startswith(...), message.get(...), ...).

#include <optional>
#include <string_view>

#include "text/jinja_value.h"

namespace s1::text::jinja {

bool is_filter(std::string_view name);
bool is_test(std::string_view name);

Value apply_filter(std::string_view name, const Value& operand, const CallArguments& arguments);
bool apply_test(std::string_view name, const Value& operand, const CallArguments& arguments);

// object.name(arguments) for a str, dict or list object; nullopt when the type has no such method.
std::optional<Value> call_method(const Value& object, std::string_view name, const CallArguments& arguments);

// The environment's global of that name, or nullopt.
std::optional<Value> global(std::string_view name);

// Jinja's getattr(object, name) and getitem(object, key): undefined when there is no such
// attribute or item; a RenderError when object itself is undefined.
Value attribute_of(const Value& object, std::string_view name);
Value item_of(const Value& object, const Value& key);
// object[start:stop:step] of a list or string; absent bounds are none.
Value slice_of(const Value& object, const Value& start, const Value& stop, const Value& step);
// The RenderError an undefined value gives where a value is needed.
[[noreturn]] void fail_undefined(const Value& undefined);

// Python's left op right for + - * / // % **; undefined operands are a RenderError.
Value arithmetic(std::string_view op, const Value& left, const Value& right);

// Python's `needle in haystack`.
bool contains(const Value& haystack, const Value& needle);
// Iterating a value as a for loop does: a list's elements, a dict's keys, a string's characters;
// undefined iterates as empty; anything else is a RenderError.
List iterate(const Value& value);

}  // namespace s1::text::jinja
