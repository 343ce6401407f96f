#pragma once
// Jinja source into a statement tree. The grammar and operator precedence are jinja2's; the
// statements are those chat templates use (if/elif/else, for with loop filters and else, set and
// block set, macro, call, filter, with, break/continue, raw, and Transformers' generation block).
// Anything else — include, extends, block, import, an unknown filter or test — is a SyntaxError
// naming the construct, so an unsupported template fails at load instead of rendering a wrong prompt.

#include <string_view>

#include "text/jinja_ast.h"
#include "text/jinja_lexer.h"

namespace s1::text::jinja {

Body parse_template(std::string_view source);

}  // namespace s1::text::jinja
