#pragma once
// A parsed Jinja template and its renderer: the interpreter behind chat templates. Parsing checks
// the whole template (syntax, statements, filter and test names) so a template that uses what is
// not supported fails when the model loads; rendering follows Python jinja2 in Transformers'
// chat-template environment (ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and
// loop controls, its tojson, raise_exception, strftime_now, namespace and dict).

#include <memory>
#include <string>
#include <string_view>

#include "text/jinja_ast.h"
#include "text/jinja_lexer.h"
#include "text/jinja_value.h"

namespace s1::text::jinja {

class Template {
 public:
  // Throws SyntaxError.
  static Template parse(std::string_view source);

  // The template rendered with these variables; throws RenderError.
  std::string render(const Dict& variables) const;

 private:
  explicit Template(std::shared_ptr<const Body> body) : body_(std::move(body)) {}
  std::shared_ptr<const Body> body_;
};

}  // namespace s1::text::jinja
