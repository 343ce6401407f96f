#include "text/jinja_template.h"

#include "text/jinja_builtins.h"
#include "text/jinja_parser.h"

namespace s1::text::jinja {
namespace {

// Bounds that keep a hostile template from running forever or recursing off the stack; real chat
// templates stay far below them.
constexpr size_t kMaxSteps = 100000;  // loop iterations and macro calls in one render
constexpr size_t kMaxCallDepth = 64;
constexpr size_t kMaxOutputBytes = 64u << 20;

// Jinja's scoping: a for-loop iteration, a macro call, a with block and a call/generation block
// each get a scope; if blocks do not. A macro keeps the scope it was defined in (live, as Python
// closures are), so it sees top-level variables set after its definition.
struct Scope {
  std::shared_ptr<Scope> parent;
  Dict variables;

  const Value* find(std::string_view name) const {
    for (const Scope* scope = this; scope != nullptr; scope = scope->parent.get()) {
      if (const Value* value = scope->variables.find(name)) return value;
    }
    return nullptr;
  }
};

enum class Flow { normal, loop_break, loop_continue };

class Renderer {
 public:
  explicit Renderer(const Dict& variables) : scope_(std::make_shared<Scope>()) { scope_->variables = variables; }
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;
  // Namespaces and macro scopes can hold themselves (ns.self = ns, a macro in the scope it closes
  // over); emptying them at the end frees those cycles.
  ~Renderer() {
    for (const auto& space : namespaces_) space->attributes = Dict();
    for (const auto& scope : closures_) scope->variables = Dict();
  }

  std::string render(const Body& body) {
    std::string out;
    execute(body, out);
    return out;
  }

 private:
  // Restores the current scope when a block that pushed one ends (also on an exception).
  class ScopeGuard {
   public:
    ScopeGuard(Renderer& renderer, std::shared_ptr<Scope> scope) : renderer_(renderer), saved_(renderer.scope_) {
      renderer_.scope_ = std::move(scope);
    }
    ~ScopeGuard() { renderer_.scope_ = std::move(saved_); }
    ScopeGuard(const ScopeGuard&) = delete;
    ScopeGuard& operator=(const ScopeGuard&) = delete;

   private:
    Renderer& renderer_;
    std::shared_ptr<Scope> saved_;
  };

  std::shared_ptr<Scope> child_of(std::shared_ptr<Scope> parent) {
    auto scope = std::make_shared<Scope>();
    scope->parent = std::move(parent);
    return scope;
  }

  void step() {
    if (++steps_ > kMaxSteps)
      throw RenderError("the template runs too long (more than 100000 loop iterations and calls)");
  }

  static void append(std::string& out, std::string_view text) {
    if (out.size() + text.size() > kMaxOutputBytes) throw RenderError("the rendered template is larger than 64 MiB");
    out.append(text);
  }

  Flow execute(const Body& body, std::string& out) {
    for (const auto& node : body) {
      const Flow flow = execute(*node, out);
      if (flow != Flow::normal) return flow;
    }
    return Flow::normal;
  }

  std::string render_body(const Body& body) {
    std::string out;
    execute(body, out);
    return out;
  }

  Flow execute(const Node& node, std::string& out) {
    switch (node.kind) {
      case Node::Kind::text:
        append(out, node.text);
        return Flow::normal;
      case Node::Kind::output:
        append(out, to_string(eval(*node.expression)));
        return Flow::normal;
      case Node::Kind::if_chain:
        for (size_t branch = 0; branch < node.conditions.size(); ++branch) {
          if (truthy(eval(*node.conditions[branch]))) return execute(node.bodies[branch], out);
        }
        if (node.bodies.size() > node.conditions.size()) return execute(node.bodies.back(), out);
        return Flow::normal;
      case Node::Kind::for_loop:
        return for_loop(node, out);
      case Node::Kind::set:
        assign(node.target, eval(*node.expression));
        return Flow::normal;
      case Node::Kind::set_block:
        assign(node.target, filtered_block(node));
        return Flow::normal;
      case Node::Kind::macro:
        scope_->variables.set(node.name, macro(node, node.name));
        return Flow::normal;
      case Node::Kind::call_block:
        append(out, to_string(call_block(node)));
        return Flow::normal;
      case Node::Kind::filter_block:
        append(out, to_string(filtered_block(node)));
        return Flow::normal;
      case Node::Kind::with: {
        auto scope = child_of(scope_);
        for (const auto& [name, expression] : node.assignments) scope->variables.set(name, eval(*expression));
        ScopeGuard guard(*this, std::move(scope));
        return execute(node.bodies[0], out);
      }
      case Node::Kind::scope: {
        ScopeGuard guard(*this, child_of(scope_));
        // A generation block is a call block in Transformers, so break and continue stop at it.
        execute(node.bodies[0], out);
        return Flow::normal;
      }
      case Node::Kind::loop_break:
        return Flow::loop_break;
      case Node::Kind::loop_continue:
        return Flow::loop_continue;
    }
    return Flow::normal;
  }

  Value filtered_block(const Node& node) {
    std::string text;
    {
      ScopeGuard guard(*this, child_of(scope_));
      execute(node.bodies[0], text);
    }
    block_values_.push_back(Value(std::move(text)));
    Value result;
    try {
      result = eval(*node.expression);
    } catch (...) {
      block_values_.pop_back();
      throw;
    }
    block_values_.pop_back();
    return result;
  }

  void bind(Scope& scope, const Target& target, const Value& value) {
    if (target.names.size() == 1) {
      scope.variables.set(target.names.front(), value);
      return;
    }
    const List items = iterate(value);
    if (items.size() != target.names.size()) {
      throw RenderError(items.size() > target.names.size()
                            ? "too many values to unpack (expected " + std::to_string(target.names.size()) + ")"
                            : "not enough values to unpack (expected " + std::to_string(target.names.size()) +
                                  ", got " + std::to_string(items.size()) + ")");
    }
    for (size_t index = 0; index < items.size(); ++index) scope.variables.set(target.names[index], items[index]);
  }

  void assign(const Target& target, const Value& value) {
    if (target.attribute.empty()) {
      bind(*scope_, target, value);
      return;
    }
    const Value* object = scope_->find(target.names.front());
    if (object == nullptr || !object->is(Value::Kind::name_space)) {
      throw RenderError("cannot assign attribute on non-namespace object");
    }
    if (target.attribute.starts_with('_')) {
      throw RenderError("Chat templates cannot store underscore-prefixed attributes on a namespace, but got '" +
                        target.attribute + "'. Please rename the attribute.");
    }
    object->name_space().attributes.set(target.attribute, value);
  }

  Flow for_loop(const Node& node, std::string& out) {
    List items = iterate(eval(*node.expression));
    if (node.condition) {
      List kept;
      for (Value& item : items) {
        step();
        ScopeGuard guard(*this, child_of(scope_));
        bind(*scope_, node.target, item);
        if (truthy(eval(*node.condition))) kept.push_back(std::move(item));
      }
      items = std::move(kept);
    }
    if (items.empty()) {
      if (node.bodies.size() > 1) return execute(node.bodies[1], out);
      return Flow::normal;
    }
    const auto length = static_cast<int64_t>(items.size());
    for (int64_t index = 0; index < length; ++index) {
      step();
      auto scope = child_of(scope_);
      bind(*scope, node.target, items[static_cast<size_t>(index)]);
      Dict loop;
      loop.reserve(12);
      loop.add("index", Value(index + 1));
      loop.add("index0", Value(index));
      loop.add("revindex", Value(length - index));
      loop.add("revindex0", Value(length - index - 1));
      loop.add("first", Value(index == 0));
      loop.add("last", Value(index == length - 1));
      loop.add("length", Value(length));
      loop.add("depth", Value(1));
      loop.add("depth0", Value(0));
      if (index > 0) loop.add("previtem", items[static_cast<size_t>(index - 1)]);
      if (index + 1 < length) loop.add("nextitem", items[static_cast<size_t>(index + 1)]);
      loop.add("cycle", Value(std::make_shared<const Callable>(Callable{
                            "cycle", [index](CallArguments arguments) {
                              if (arguments.positional.empty()) throw RenderError("no items for cycling given");
                              return arguments.positional[static_cast<size_t>(index) % arguments.positional.size()];
                            }})));
      scope->variables.set("loop", Value(std::move(loop)));
      ScopeGuard guard(*this, std::move(scope));
      if (execute(node.bodies[0], out) == Flow::loop_break) break;
    }
    return Flow::normal;
  }

  Value macro(const Node& node, const std::string& name) {
    std::shared_ptr<Scope> closure = scope_;
    closures_.push_back(closure);
    return Value(std::make_shared<const Callable>(Callable{name, [this, &node, name, closure](CallArguments arguments) {
                                                             return call_macro(node, name, closure,
                                                                               std::move(arguments));
                                                           }}));
  }

  Value call_macro(const Node& node, const std::string& name, const std::shared_ptr<Scope>& closure,
                   CallArguments arguments) {
    step();
    if (depth_ >= kMaxCallDepth) throw RenderError("macro calls nest deeper than 64");
    if (arguments.positional.size() > node.parameters.size()) {
      throw RenderError("macro '" + name + "' takes not more than " + std::to_string(node.parameters.size()) +
                        " argument(s)");
    }
    auto scope = child_of(closure);
    for (auto& [keyword, value] : arguments.keyword) {
      bool known = keyword == "caller";
      for (size_t index = 0; index < node.parameters.size(); ++index) {
        if (node.parameters[index].name != keyword) continue;
        if (index < arguments.positional.size())
          throw RenderError("macro '" + name + "' got multiple values for argument '" + keyword + "'");
        known = true;
      }
      if (!known) throw RenderError("macro '" + name + "' takes no keyword argument '" + keyword + "'");
      scope->variables.set(keyword, value);
    }
    ScopeGuard guard(*this, scope);
    for (size_t index = 0; index < node.parameters.size(); ++index) {
      const MacroParameter& parameter = node.parameters[index];
      if (index < arguments.positional.size()) {
        scope->variables.set(parameter.name, arguments.positional[index]);
      } else if (scope->variables.find(parameter.name) == nullptr) {
        // A missing argument without a default is undefined, as in Jinja.
        scope->variables.set(parameter.name, parameter.default_value ? eval(*parameter.default_value)
                                                                     : Value::undefined("parameter '" + parameter.name +
                                                                                        "' was not provided"));
      }
    }
    ++depth_;
    std::string out;
    try {
      execute(node.bodies[0], out);
    } catch (...) {
      --depth_;
      throw;
    }
    --depth_;
    return Value(std::move(out));
  }

  Value call_block(const Node& node) {
    const Expr& call = *node.expression;
    CallArguments arguments = evaluate_arguments(call);
    std::shared_ptr<Scope> closure = scope_;
    closures_.push_back(closure);
    arguments.keyword.emplace_back(
        "caller", Value(std::make_shared<const Callable>(
                      Callable{"caller", [this, &node, closure](CallArguments caller_arguments) {
                                 return call_macro(node, "caller", closure, std::move(caller_arguments));
                               }})));
    return invoke(eval(*call.children[0]), std::move(arguments));
  }

  CallArguments evaluate_arguments(const Expr& expr) {
    CallArguments arguments;
    for (size_t index = 1; index < expr.children.size(); ++index)
      arguments.positional.push_back(eval(*expr.children[index]));
    for (const auto& [name, value] : expr.keywords) arguments.keyword.emplace_back(name, eval(*value));
    return arguments;
  }

  static Value invoke(const Value& callee, CallArguments arguments) {
    if (callee.is(Value::Kind::callable)) return callee.callable().call(std::move(arguments));
    if (callee.is(Value::Kind::undefined)) fail_undefined(callee);
    throw RenderError("'" + std::string(callee.type_name()) + "' object is not callable");
  }

  // namespace(...) is made here, not in the globals, so that the renderer knows every namespace.
  Value make_namespace(const CallArguments& arguments) {
    auto space = std::make_shared<Namespace>();
    const auto add = [&](const std::string& name, const Value& value) {
      if (name.starts_with('_')) {
        throw RenderError("Chat templates cannot store underscore-prefixed attributes on a namespace, but got '" +
                          name + "'. Please rename the attribute.");
      }
      space->attributes.set(name, value);
    };
    if (arguments.positional.size() > 1) throw RenderError("namespace expected at most 1 argument");
    if (!arguments.positional.empty()) {
      if (!arguments.positional[0].is(Value::Kind::dict)) throw RenderError("namespace() takes a dict or keywords");
      for (const auto& [name, value] : arguments.positional[0].dict().items()) add(name, value);
    }
    for (const auto& [name, value] : arguments.keyword) add(name, value);
    namespaces_.push_back(space);
    return Value(std::move(space));
  }

  Value lookup(const std::string& name) {
    if (const Value* value = scope_->find(name)) return *value;
    if (name == "namespace") {
      return Value(std::make_shared<const Callable>(
          Callable{"namespace", [this](CallArguments arguments) { return make_namespace(arguments); }}));
    }
    if (std::optional<Value> value = global(name)) return *value;
    return Value::undefined("'" + name + "' is undefined");
  }

  Value call(const Expr& expr) {
    const Expr& callee = *expr.children[0];
    if (callee.kind == Expr::Kind::attribute) {
      const Value object = eval(*callee.children[0]);
      if (object.is(Value::Kind::undefined)) fail_undefined(object);
      CallArguments arguments = evaluate_arguments(expr);
      if (std::optional<Value> result = call_method(object, callee.name, arguments)) return *result;
      return invoke(attribute_of(object, callee.name), std::move(arguments));
    }
    const Value function = eval(callee);
    return invoke(function, evaluate_arguments(expr));
  }

  Value compare_chain(const Expr& expr) {
    Value left = eval(*expr.children[0]);
    for (size_t index = 0; index < expr.operators.size(); ++index) {
      Value right = eval(*expr.children[index + 1]);
      const std::string& op = expr.operators[index];
      bool holds = false;
      if (op == "==") {
        holds = equal(left, right);
      } else if (op == "!=") {
        holds = !equal(left, right);
      } else if (op == "in") {
        holds = contains(right, left);
      } else if (op == "not in") {
        holds = !contains(right, left);
      } else {
        if (left.is(Value::Kind::undefined)) fail_undefined(left);
        if (right.is(Value::Kind::undefined)) fail_undefined(right);
        const int order = compare(left, right);
        holds = op == "<" ? order < 0 : op == ">" ? order > 0 : op == "<=" ? order <= 0 : order >= 0;
      }
      if (!holds) return Value(false);
      left = std::move(right);
    }
    return Value(true);
  }

  Value eval(const Expr& expr) {
    switch (expr.kind) {
      case Expr::Kind::literal:
        return expr.value;
      case Expr::Kind::name:
        return lookup(expr.name);
      case Expr::Kind::list:
      case Expr::Kind::tuple: {
        List list;
        list.reserve(expr.children.size());
        for (const auto& child : expr.children) list.push_back(eval(*child));
        return expr.kind == Expr::Kind::tuple ? Value::tuple(std::move(list)) : Value(std::move(list));
      }
      case Expr::Kind::dict: {
        Dict dict;
        for (size_t index = 0; index + 1 < expr.children.size(); index += 2) {
          const Value key = eval(*expr.children[index]);
          if (!key.is(Value::Kind::string)) throw RenderError("unsupported construct: a dict key that is not a string");
          dict.set(key.string(), eval(*expr.children[index + 1]));
        }
        return Value(std::move(dict));
      }
      case Expr::Kind::attribute:
        return attribute_of(eval(*expr.children[0]), expr.name);
      case Expr::Kind::subscript:
        return item_of(eval(*expr.children[0]), eval(*expr.children[1]));
      case Expr::Kind::slice: {
        const auto bound = [&](size_t index) {
          return expr.children[index] ? eval(*expr.children[index]) : Value::none();
        };
        return slice_of(eval(*expr.children[0]), bound(1), bound(2), bound(3));
      }
      case Expr::Kind::call:
        return call(expr);
      case Expr::Kind::filter:
        return apply_filter(expr.name, eval(*expr.children[0]), evaluate_arguments(expr));
      case Expr::Kind::test:
        return Value(apply_test(expr.name, eval(*expr.children[0]), evaluate_arguments(expr)) != expr.negated);
      case Expr::Kind::negate:
        return arithmetic("-", Value(0), eval(*expr.children[0]));
      case Expr::Kind::plus:
        return arithmetic("+", Value(0), eval(*expr.children[0]));
      case Expr::Kind::logical_not:
        return Value(!truthy(eval(*expr.children[0])));
      case Expr::Kind::logical_and: {
        Value left = eval(*expr.children[0]);
        return truthy(left) ? eval(*expr.children[1]) : left;
      }
      case Expr::Kind::logical_or: {
        Value left = eval(*expr.children[0]);
        return truthy(left) ? left : eval(*expr.children[1]);
      }
      case Expr::Kind::binary:
        return arithmetic(expr.name, eval(*expr.children[0]), eval(*expr.children[1]));
      case Expr::Kind::concat: {
        std::string text;
        for (const auto& child : expr.children) append(text, to_string(eval(*child)));
        return Value(std::move(text));
      }
      case Expr::Kind::compare:
        return compare_chain(expr);
      case Expr::Kind::conditional:
        if (truthy(eval(*expr.children[0]))) return eval(*expr.children[1]);
        return expr.children[2] ? eval(*expr.children[2]) : Value::undefined("the conditional expression has no else");
      case Expr::Kind::block_value:
        return block_values_.back();
    }
    return Value();
  }

  std::shared_ptr<Scope> scope_;
  std::vector<Value> block_values_;
  std::vector<std::shared_ptr<Namespace>> namespaces_;
  std::vector<std::shared_ptr<Scope>> closures_;
  size_t steps_ = 0;
  size_t depth_ = 0;
};

}  // namespace

Template Template::parse(std::string_view source) {
  return Template(std::make_shared<const Body>(parse_template(source)));
}

std::string Template::render(const Dict& variables) const { return Renderer(variables).render(*body_); }

}  // namespace s1::text::jinja
