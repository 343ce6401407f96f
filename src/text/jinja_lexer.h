#pragma once
// Jinja template source into tokens, with the whitespace rules of the environment Transformers
// renders chat templates in: trim_blocks (the newline after a block or comment tag is dropped),
// lstrip_blocks (spaces before a block or comment tag on its own line are dropped), `-` on a tag
// strips the whitespace on that side, `+` keeps it; the source's line breaks are read as Python's
// splitlines reads them and one trailing newline is dropped (keep_trailing_newline=False).

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace s1::text::jinja {

class SyntaxError : public std::runtime_error {
 public:
  SyntaxError(int line, const std::string& message)
      : std::runtime_error("line " + std::to_string(line) + ": " + message), line_(line) {}
  int line() const { return line_; }

 private:
  int line_;
};

struct Token {
  enum class Kind {
    text,
    block_begin,
    block_end,
    variable_begin,
    variable_end,
    name,
    string,
    integer,
    floating,
    op,
    end
  };
  Kind kind;
  std::string text;  // text data, a name, an operator, a string literal's value, a number's digits
  int line;
};

std::vector<Token> tokenize(std::string_view source);

}  // namespace s1::text::jinja
