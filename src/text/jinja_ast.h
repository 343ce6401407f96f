#pragma once
// The parsed form of a Jinja template: expressions and statements, as jinja_parser builds them and
// jinja_render walks them.

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja_value.h"

namespace s1::text::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    literal,      // value
    name,         // name
    list,         // children: the elements
    tuple,        // children: the elements
    dict,         // children: key, value, key, value, ...
    attribute,    // children[0].name
    subscript,    // children[0][children[1]]
    slice,        // children[0][children[1]:children[2]:children[3]], absent bounds null
    call,         // children[0](children[1..], keywords)
    filter,       // children[0] | name(children[1..], keywords)
    test,         // children[0] is [not] name(children[1..], keywords)
    negate,       // -children[0]
    plus,         // +children[0]
    logical_not,  // not children[0]
    logical_and,
    logical_or,
    binary,       // children[0] name children[1] for + - * / // % **
    concat,       // children joined by ~
    compare,      // children[0] operators[0] children[1] operators[1] children[2] ...
    conditional,  // children[1] if children[0] else children[2] (null: undefined)
    block_value,  // what a filter block or a set block rendered
  };

  Kind kind;
  int line = 0;
  Value value;
  std::string name;
  bool negated = false;
  std::vector<ExprPtr> children;
  std::vector<std::pair<std::string, ExprPtr>> keywords;
  std::vector<std::string> operators;
};

struct Node;
using Body = std::vector<std::unique_ptr<Node>>;

// What a set or a for loop assigns to: names (several unpack a sequence), or one namespace
// attribute (name.attribute).
struct Target {
  std::vector<std::string> names;
  std::string attribute;
};

struct MacroParameter {
  std::string name;
  ExprPtr default_value;  // null: required
};

struct Node {
  enum class Kind {
    text,          // text
    output,        // {{ expression }}
    if_chain,      // conditions[i] → bodies[i]; bodies.back() is the else branch when it has one more
    for_loop,      // for target in expression [if condition] bodies[0] [else bodies[1]]
    set,           // set target = expression
    set_block,     // set target [| filters] bodies[0] endset; expression: the filters over block_value
    macro,         // macro name(parameters) bodies[0]
    call_block,    // call[(parameters)] expression bodies[0]: the body is the macro `caller`
    filter_block,  // filter expression (over block_value) bodies[0]
    with,          // with assignments bodies[0]
    scope,         // a body with its own scope (Transformers' generation block)
    loop_break,
    loop_continue,
  };

  Kind kind;
  int line = 0;
  std::string text;
  std::string name;
  ExprPtr expression;
  ExprPtr condition;
  Target target;
  std::vector<ExprPtr> conditions;
  std::vector<Body> bodies;
  std::vector<MacroParameter> parameters;
  std::vector<std::pair<std::string, ExprPtr>> assignments;
};

}  // namespace s1::text::jinja
