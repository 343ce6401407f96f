#include "text/jinja_parser.h"

#include <charconv>
#include <cstdlib>
#include <set>

#include "text/jinja_builtins.h"

namespace s1::text::jinja {
namespace {

ExprPtr make(Expr::Kind kind, int line) {
  auto expr = std::make_unique<Expr>();
  expr->kind = kind;
  expr->line = line;
  return expr;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Body parse() {
    Body body = statements({});
    if (current().kind != Token::Kind::end) fail("unexpected '" + current().text + "'");
    return body;
  }

 private:
  const Token& current() const { return tokens_[at_]; }
  const Token& peek(size_t ahead = 1) const { return tokens_[std::min(at_ + ahead, tokens_.size() - 1)]; }
  Token next() { return tokens_[at_ < tokens_.size() - 1 ? at_++ : at_]; }
  [[noreturn]] void fail(const std::string& message) const { throw SyntaxError(current().line, message); }

  bool at_op(std::string_view op) const { return current().kind == Token::Kind::op && current().text == op; }
  bool at_name(std::string_view name) const { return current().kind == Token::Kind::name && current().text == name; }
  bool skip_op(std::string_view op) {
    if (!at_op(op)) return false;
    ++at_;
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!at_name(name)) return false;
    ++at_;
    return true;
  }
  void expect_op(std::string_view op) {
    if (!skip_op(op)) fail("expected '" + std::string(op) + "', got '" + describe(current()) + "'");
  }
  void expect_name(std::string_view name) {
    if (!skip_name(name)) fail("expected '" + std::string(name) + "', got '" + describe(current()) + "'");
  }
  std::string expect_identifier() {
    if (current().kind != Token::Kind::name) fail("expected a name, got '" + describe(current()) + "'");
    return next().text;
  }
  void expect_block_end() {
    if (current().kind != Token::Kind::block_end)
      fail("expected the end of the statement, got '" + describe(current()) + "'");
    ++at_;
  }
  static std::string describe(const Token& token) {
    switch (token.kind) {
      case Token::Kind::end:
        return "end of template";
      case Token::Kind::block_end:
        return "%}";
      case Token::Kind::variable_end:
        return "}}";
      case Token::Kind::text:
        return "text";
      default:
        return token.text;
    }
  }

  // Statements up to a block whose keyword is one of `ends` (left unconsumed, at the keyword).
  Body statements(const std::set<std::string_view>& ends) {
    Body body;
    while (true) {
      const Token& token = current();
      if (token.kind == Token::Kind::end) {
        if (!ends.empty()) fail("unexpected end of template, expected '" + std::string(*ends.begin()) + "'");
        return body;
      }
      if (token.kind == Token::Kind::text) {
        auto node = std::make_unique<Node>();
        node->kind = Node::Kind::text;
        node->line = token.line;
        node->text = token.text;
        body.push_back(std::move(node));
        ++at_;
      } else if (token.kind == Token::Kind::variable_begin) {
        ++at_;
        auto node = std::make_unique<Node>();
        node->kind = Node::Kind::output;
        node->line = token.line;
        node->expression = tuple_or_expression();
        if (current().kind != Token::Kind::variable_end) fail("expected '}}', got '" + describe(current()) + "'");
        ++at_;
        body.push_back(std::move(node));
      } else if (token.kind == Token::Kind::block_begin) {
        if (peek().kind == Token::Kind::name && ends.contains(peek().text)) {
          ++at_;
          return body;
        }
        ++at_;
        body.push_back(statement());
      } else {
        fail("unexpected '" + describe(token) + "'");
      }
    }
  }

  // Consumes `{% keyword %}` of a block end already seen by statements().
  void end_block(std::string_view keyword) {
    expect_name(keyword);
    expect_block_end();
  }

  std::unique_ptr<Node> statement() {
    const NestingGuard guard(*this);
    if (current().kind != Token::Kind::name) fail("expected a statement name, got '" + describe(current()) + "'");
    auto node = std::make_unique<Node>();
    node->line = current().line;
    const std::string keyword = next().text;
    if (keyword == "if") {
      node->kind = Node::Kind::if_chain;
      node->conditions.push_back(tuple_or_expression());
      expect_block_end();
      while (true) {
        node->bodies.push_back(statements({"elif", "else", "endif"}));
        if (skip_name("elif")) {
          node->conditions.push_back(tuple_or_expression());
          expect_block_end();
        } else if (skip_name("else")) {
          expect_block_end();
          node->bodies.push_back(statements({"endif"}));
          end_block("endif");
          break;
        } else {
          end_block("endif");
          break;
        }
      }
    } else if (keyword == "for") {
      node->kind = Node::Kind::for_loop;
      node->target = assign_target(false);
      expect_name("in");
      node->expression = tuple_or_expression(false);
      if (skip_name("if")) node->condition = expression();
      if (at_name("recursive")) fail("unsupported construct: recursive for loops");
      expect_block_end();
      ++loop_depth_;
      node->bodies.push_back(statements({"endfor", "else"}));
      --loop_depth_;
      if (skip_name("else")) {
        expect_block_end();
        node->bodies.push_back(statements({"endfor"}));
      }
      end_block("endfor");
    } else if (keyword == "set") {
      node->target = assign_target(true);
      if (skip_op("=")) {
        node->kind = Node::Kind::set;
        node->expression = tuple_or_expression();
        expect_block_end();
      } else {
        node->kind = Node::Kind::set_block;
        if (node->target.names.size() != 1 || !node->target.attribute.empty()) fail("a block set assigns one name");
        node->expression = filters_over(make(Expr::Kind::block_value, node->line));
        expect_block_end();
        node->bodies.push_back(statements({"endset"}));
        end_block("endset");
      }
    } else if (keyword == "macro") {
      node->kind = Node::Kind::macro;
      node->name = expect_identifier();
      node->parameters = parameters();
      expect_block_end();
      node->bodies.push_back(function_body("endmacro"));
      end_block("endmacro");
    } else if (keyword == "call") {
      node->kind = Node::Kind::call_block;
      if (at_op("(")) node->parameters = parameters();
      node->expression = expression();
      if (node->expression->kind != Expr::Kind::call) fail("expected a call after 'call'");
      expect_block_end();
      node->bodies.push_back(function_body("endcall"));
      end_block("endcall");
    } else if (keyword == "filter") {
      node->kind = Node::Kind::filter_block;
      node->expression = filter_chain(make(Expr::Kind::block_value, node->line));
      expect_block_end();
      node->bodies.push_back(statements({"endfilter"}));
      end_block("endfilter");
    } else if (keyword == "with") {
      node->kind = Node::Kind::with;
      while (current().kind != Token::Kind::block_end) {
        if (!node->assignments.empty()) expect_op(",");
        std::string name = expect_identifier();
        expect_op("=");
        node->assignments.emplace_back(std::move(name), expression());
      }
      expect_block_end();
      node->bodies.push_back(statements({"endwith"}));
      end_block("endwith");
    } else if (keyword == "generation") {
      node->kind = Node::Kind::scope;
      expect_block_end();
      node->bodies.push_back(function_body("endgeneration"));
      end_block("endgeneration");
    } else if (keyword == "break" || keyword == "continue") {
      if (loop_depth_ == 0) fail("'" + keyword + "' outside a loop");
      node->kind = keyword == "break" ? Node::Kind::loop_break : Node::Kind::loop_continue;
      expect_block_end();
    } else {
      static const std::set<std::string_view> known_unsupported = {"include",    "extends", "block", "import",   "from",
                                                                   "autoescape", "do",      "trans", "pluralize"};
      if (known_unsupported.contains(keyword)) fail("unsupported construct: the '" + keyword + "' statement");
      fail("unknown statement '" + keyword + "'");
    }
    return node;
  }

  // The body of a macro, call block or generation block: a function in Jinja, so a loop around it
  // is not one its break or continue can leave.
  Body function_body(std::string_view end) {
    const int saved = loop_depth_;
    loop_depth_ = 0;
    Body body = statements({end});
    loop_depth_ = saved;
    return body;
  }

  Target assign_target(bool allow_attribute) {
    Target target;
    const bool parenthesised = skip_op("(");
    target.names.push_back(expect_identifier());
    if (allow_attribute && skip_op(".")) {
      target.attribute = expect_identifier();
      return target;
    }
    while (skip_op(",")) {
      if (current().kind != Token::Kind::name || at_name("in")) break;
      target.names.push_back(expect_identifier());
    }
    if (parenthesised) expect_op(")");
    return target;
  }

  // Items up to the closing bracket, separated by commas, a trailing comma allowed; the opening
  // bracket is already read.
  template <typename ReadItem>
  void comma_separated(std::string_view close, ReadItem read_item) {
    bool first = true;
    while (!skip_op(close)) {
      if (!first) expect_op(",");
      first = false;
      if (skip_op(close)) break;
      read_item();
    }
  }

  std::vector<MacroParameter> parameters() {
    std::vector<MacroParameter> result;
    expect_op("(");
    comma_separated(")", [&] {
      MacroParameter parameter;
      parameter.name = expect_identifier();
      if (skip_op("=")) {
        parameter.default_value = expression();
      } else if (!result.empty() && result.back().default_value) {
        fail("non-default argument follows default argument");
      }
      result.push_back(std::move(parameter));
    });
    return result;
  }

  // A filter chain `| f(args) | g` (the first pipe optional, as after `filter`) over `operand`.
  ExprPtr filter_chain(ExprPtr operand) {
    operand = filter(std::move(operand));
    while (skip_op("|")) operand = filter(std::move(operand));
    return operand;
  }
  ExprPtr filters_over(ExprPtr operand) {
    while (skip_op("|")) operand = filter(std::move(operand));
    return operand;
  }

  // An expression, or several separated by commas read as a tuple (a list here).
  ExprPtr tuple_or_expression(bool with_condition = true) {
    const int line = current().line;
    ExprPtr first = with_condition ? expression() : or_expression();
    if (!at_op(",")) return first;
    auto tuple = make(Expr::Kind::tuple, line);
    tuple->children.push_back(std::move(first));
    while (skip_op(",")) {
      if (current().kind == Token::Kind::block_end || current().kind == Token::Kind::variable_end) break;
      tuple->children.push_back(with_condition ? expression() : or_expression());
    }
    return tuple;
  }

  // Bounds the recursion of nested expressions and blocks, so hostile input cannot exhaust the stack.
  class NestingGuard {
   public:
    explicit NestingGuard(Parser& parser) : parser_(parser) {
      if (++parser_.nesting_ > kMaxNesting) parser_.fail("expressions or blocks nest deeper than 200");
    }
    ~NestingGuard() { --parser_.nesting_; }
    NestingGuard(const NestingGuard&) = delete;
    NestingGuard& operator=(const NestingGuard&) = delete;

   private:
    Parser& parser_;
  };
  static constexpr int kMaxNesting = 200;

  ExprPtr expression() {
    const NestingGuard guard(*this);
    ExprPtr value = or_expression();
    while (at_name("if")) {
      const int line = next().line;
      auto conditional = make(Expr::Kind::conditional, line);
      conditional->children.push_back(or_expression());
      conditional->children.push_back(std::move(value));
      conditional->children.push_back(skip_name("else") ? expression() : nullptr);
      value = std::move(conditional);
    }
    return value;
  }

  ExprPtr binary_chain(Expr::Kind kind, std::string_view keyword, ExprPtr (Parser::*operand)()) {
    ExprPtr left = (this->*operand)();
    while (at_name(keyword)) {
      auto node = make(kind, next().line);
      node->children.push_back(std::move(left));
      node->children.push_back((this->*operand)());
      left = std::move(node);
    }
    return left;
  }
  ExprPtr or_expression() { return binary_chain(Expr::Kind::logical_or, "or", &Parser::and_expression); }
  ExprPtr and_expression() { return binary_chain(Expr::Kind::logical_and, "and", &Parser::not_expression); }

  ExprPtr not_expression() {
    if (at_name("not")) {
      auto node = make(Expr::Kind::logical_not, next().line);
      node->children.push_back(not_expression());
      return node;
    }
    return comparison();
  }

  ExprPtr comparison() {
    const int line = current().line;
    ExprPtr first = math1();
    auto node = make(Expr::Kind::compare, line);
    node->children.push_back(std::move(first));
    while (true) {
      const Token& token = current();
      if (token.kind == Token::Kind::op && (token.text == "==" || token.text == "!=" || token.text == "<" ||
                                            token.text == ">" || token.text == "<=" || token.text == ">=")) {
        node->operators.push_back(next().text);
      } else if (at_name("in")) {
        ++at_;
        node->operators.push_back("in");
      } else if (at_name("not") && peek().kind == Token::Kind::name && peek().text == "in") {
        at_ += 2;
        node->operators.push_back("not in");
      } else {
        break;
      }
      node->children.push_back(math1());
    }
    if (node->operators.empty()) return std::move(node->children.front());
    return node;
  }

  ExprPtr binary_ops(std::initializer_list<std::string_view> ops, ExprPtr (Parser::*operand)()) {
    ExprPtr left = (this->*operand)();
    while (true) {
      bool matched = false;
      for (const std::string_view op : ops) {
        if (!at_op(op)) continue;
        auto node = make(Expr::Kind::binary, next().line);
        node->name = std::string(op);
        node->children.push_back(std::move(left));
        node->children.push_back((this->*operand)());
        left = std::move(node);
        matched = true;
        break;
      }
      if (!matched) return left;
    }
  }
  ExprPtr math1() { return binary_ops({"+", "-"}, &Parser::concat); }
  ExprPtr concat() {
    const int line = current().line;
    ExprPtr first = math2();
    if (!at_op("~")) return first;
    auto node = make(Expr::Kind::concat, line);
    node->children.push_back(std::move(first));
    while (skip_op("~")) node->children.push_back(math2());
    return node;
  }
  ExprPtr math2() { return binary_ops({"*", "/", "//", "%"}, &Parser::power); }
  ExprPtr power() { return binary_ops({"**"}, &Parser::unary_with_filters); }
  ExprPtr unary_with_filters() { return unary(true); }

  ExprPtr unary(bool with_filters) {
    const NestingGuard guard(*this);
    const int line = current().line;
    ExprPtr node;
    if (skip_op("-")) {
      node = make(Expr::Kind::negate, line);
      node->children.push_back(unary(false));
    } else if (skip_op("+")) {
      node = make(Expr::Kind::plus, line);
      node->children.push_back(unary(false));
    } else {
      node = postfix(primary());
    }
    if (with_filters) node = filter_expression(std::move(node));
    return node;
  }

  ExprPtr primary() {
    const Token token = next();
    switch (token.kind) {
      case Token::Kind::name: {
        if (token.text == "true" || token.text == "True") return literal(Value(true), token.line);
        if (token.text == "false" || token.text == "False") return literal(Value(false), token.line);
        if (token.text == "none" || token.text == "None") return literal(Value::none(), token.line);
        auto node = make(Expr::Kind::name, token.line);
        node->name = token.text;
        return node;
      }
      case Token::Kind::string: {
        std::string text = token.text;
        while (current().kind == Token::Kind::string) text += next().text;  // adjacent literals join
        return literal(Value(std::move(text)), token.line);
      }
      case Token::Kind::integer: {
        int64_t value = 0;
        const auto [end, error] = std::from_chars(token.text.data(), token.text.data() + token.text.size(), value);
        if (error != std::errc()) throw SyntaxError(token.line, "integer literal out of range: " + token.text);
        return literal(Value(value), token.line);
      }
      case Token::Kind::floating:
        // strtod, unlike stod, returns denormals and infinities rather than throwing.
        return literal(Value(std::strtod(token.text.c_str(), nullptr)), token.line);
      case Token::Kind::op:
        if (token.text == "(") {
          if (skip_op(")")) return make(Expr::Kind::tuple, token.line);
          ExprPtr inner = expression();
          if (at_op(",")) {
            auto tuple = make(Expr::Kind::tuple, token.line);
            tuple->children.push_back(std::move(inner));
            while (skip_op(",")) {
              if (at_op(")")) break;
              tuple->children.push_back(expression());
            }
            inner = std::move(tuple);
          }
          expect_op(")");
          return inner;
        }
        if (token.text == "[") {
          auto list = make(Expr::Kind::list, token.line);
          comma_separated("]", [&] { list->children.push_back(expression()); });
          return list;
        }
        if (token.text == "{") {
          auto dict = make(Expr::Kind::dict, token.line);
          comma_separated("}", [&] {
            dict->children.push_back(expression());
            expect_op(":");
            dict->children.push_back(expression());
          });
          return dict;
        }
        break;
      default:
        break;
    }
    throw SyntaxError(token.line, "unexpected '" + describe(token) + "'");
  }

  static ExprPtr literal(Value value, int line) {
    auto node = make(Expr::Kind::literal, line);
    node->value = std::move(value);
    return node;
  }

  ExprPtr postfix(ExprPtr node) {
    while (true) {
      const int line = current().line;
      if (skip_op(".")) {
        auto attribute = make(Expr::Kind::attribute, line);
        if (current().kind == Token::Kind::integer) {
          // foo.0 is foo[0] in Jinja.
          attribute->kind = Expr::Kind::subscript;
          attribute->children.push_back(std::move(node));
          attribute->children.push_back(literal(Value(static_cast<int64_t>(std::stoll(next().text))), line));
        } else {
          attribute->name = expect_identifier();
          attribute->children.push_back(std::move(node));
        }
        node = std::move(attribute);
      } else if (skip_op("[")) {
        node = subscript(std::move(node), line);
      } else if (at_op("(")) {
        node = call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr subscript(ExprPtr object, int line) {
    ExprPtr bounds[3];
    bool is_slice = false;
    for (size_t part = 0; part < 3; ++part) {
      if (!at_op(":") && !at_op("]")) bounds[part] = expression();
      if (part < 2 && skip_op(":")) {
        is_slice = true;
        continue;
      }
      break;
    }
    expect_op("]");
    auto node = make(is_slice ? Expr::Kind::slice : Expr::Kind::subscript, line);
    node->children.push_back(std::move(object));
    if (!is_slice) {
      if (!bounds[0]) throw SyntaxError(line, "expected an index inside []");
      node->children.push_back(std::move(bounds[0]));
    } else {
      for (ExprPtr& bound : bounds) node->children.push_back(std::move(bound));
    }
    return node;
  }

  // Arguments in parentheses into node->children (after what is there) and node->keywords.
  void arguments(Expr& node) {
    expect_op("(");
    comma_separated(")", [&] {
      if (at_op("*") || at_op("**")) fail("unsupported construct: *args and **kwargs in calls");
      if (current().kind == Token::Kind::name && peek().kind == Token::Kind::op && peek().text == "=") {
        std::string name = next().text;
        ++at_;
        node.keywords.emplace_back(std::move(name), expression());
      } else {
        if (!node.keywords.empty()) fail("positional argument follows keyword argument");
        node.children.push_back(expression());
      }
    });
  }

  ExprPtr call(ExprPtr callee) {
    auto node = make(Expr::Kind::call, current().line);
    node->children.push_back(std::move(callee));
    arguments(*node);
    return node;
  }

  ExprPtr filter_expression(ExprPtr node) {
    while (true) {
      if (skip_op("|")) {
        node = filter(std::move(node));
      } else if (at_name("is")) {
        ++at_;
        node = test(std::move(node));
      } else if (at_op("(")) {
        node = call(std::move(node));
      } else {
        return node;
      }
    }
  }

  std::string dotted_name() {
    std::string name = expect_identifier();
    while (skip_op(".")) name += "." + expect_identifier();
    return name;
  }

  ExprPtr filter(ExprPtr operand) {
    auto node = make(Expr::Kind::filter, current().line);
    node->name = dotted_name();
    if (!is_filter(node->name)) fail("unsupported construct: the filter '" + node->name + "'");
    node->children.push_back(std::move(operand));
    if (at_op("(")) arguments(*node);
    return node;
  }

  ExprPtr test(ExprPtr operand) {
    auto node = make(Expr::Kind::test, current().line);
    node->negated = skip_name("not");
    node->name = dotted_name();
    if (!is_test(node->name)) fail("unsupported construct: the test '" + node->name + "'");
    node->children.push_back(std::move(operand));
    const Token& token = current();
    if (at_op("(")) {
      arguments(*node);
    } else if ((token.kind == Token::Kind::name || token.kind == Token::Kind::string ||
                token.kind == Token::Kind::integer || token.kind == Token::Kind::floating || at_op("[") ||
                at_op("{")) &&
               !at_name("else") && !at_name("or") && !at_name("and")) {
      // `x is divisibleby 3`, `x is sameas false`: one argument without parentheses.
      node->children.push_back(postfix(primary()));
    }
    return node;
  }

  std::vector<Token> tokens_;
  size_t at_ = 0;
  int loop_depth_ = 0;
  int nesting_ = 0;
};

}  // namespace

Body parse_template(std::string_view source) { return Parser(tokenize(source)).parse(); }

}  // namespace s1::text::jinja
