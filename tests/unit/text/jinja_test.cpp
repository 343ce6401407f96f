// The interpreter's bounds on hostile templates (each a RenderError, never a hang or a crash) and
// what it does that the jinja2 parity fixtures cannot show. Rendering semantics are checked
// against jinja2 in tests/parity/text/jinja_parity_test.cpp.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "text/jinja_template.h"

namespace s1::text::jinja {
namespace {

std::string render_error(const std::string& source) {
  try {
    Template::parse(source).render(Dict());
  } catch (const RenderError& error) {
    return error.what();
  }
  return "no error";
}

TEST(Jinja, UnboundedRecursionIsARenderError) {
  EXPECT_THAT(render_error("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}"),
              testing::HasSubstr("nest deeper than 64"));
}

TEST(Jinja, RunawayLoopsAreARenderError) {
  EXPECT_THAT(render_error("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"),
              testing::HasSubstr("runs too long"));
}

TEST(Jinja, HugeValuesAreARenderError) {
  EXPECT_THAT(render_error("{{ 'x' * 1000000000 }}"), testing::HasSubstr("too large"));
  EXPECT_THAT(render_error("{{ range(1000000000) | length }}"), testing::HasSubstr("too long"));
  EXPECT_THAT(render_error("{{ 9223372036854775807 + 1 }}"), testing::HasSubstr("integer overflow"));
}

TEST(Jinja, NamespacesHoldingThemselvesRender) {
  // The cycle is freed when the render ends (the sanitizer build checks for the leak).
  EXPECT_EQ(Template::parse("{% set ns = namespace(n=1) %}{% set ns.self = ns %}{{ ns.self.self.n }}").render(Dict()),
            "1");
}

TEST(Jinja, VariablesComeFromJsonInTheirOrder) {
  const Value variables = Value::from_json(nlohmann::ordered_json::parse(R"({"d": {"z": 1, "a": [true, null, 1.5]}})"));
  EXPECT_EQ(Template::parse("{{ d | tojson }} {{ d }}").render(variables.dict()),
            R"({"z": 1, "a": [true, null, 1.5]} {'z': 1, 'a': [True, None, 1.5]})");
}

}  // namespace
}  // namespace s1::text::jinja
