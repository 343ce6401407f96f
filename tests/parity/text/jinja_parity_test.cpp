// The Jinja interpreter vs Python jinja2 in Transformers' chat-template environment
// (tools/reference/make_jinja_fixtures.py): small templates for each construct and Python corner
// (jinja_cases.jsonl), and every chat template in tests/parity/text/chat_templates/ — ours and
// llama.cpp's copies — over generated conversations (jinja_chat_renders.jsonl). The text must match
// byte for byte; where Python raised, the interpreter must refuse too (at parse or at render), with
// the same message for the template's own raise_exception.

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "source_files.h"
#include "text/jinja_template.h"

namespace s1::text::jinja {
namespace {

using test::read_file;
using test::source_dir;

std::vector<nlohmann::ordered_json> read_records(const std::string& name) {
  std::ifstream file(source_dir() / "tests/parity/text" / name);
  if (!file) throw std::runtime_error("cannot open " + name);
  std::vector<nlohmann::ordered_json> records;
  for (std::string line; std::getline(file, line);) records.push_back(nlohmann::ordered_json::parse(line));
  records.erase(records.begin());  // the header
  return records;
}

struct Tally {
  size_t rendered = 0;
  size_t refused = 0;
};

void expect_matches(const std::string& source, const nlohmann::ordered_json& record, const std::string& where,
                    Tally& tally) {
  const Value variables = Value::from_json(record["variables"]);
  if (record.contains("text") && record["text"].get<std::string>().find("<generator object") != std::string::npos) {
    // Python writes a generator's address; the interpreter refuses to, by design.
    EXPECT_THROW(Template::parse(source).render(variables.dict()), RenderError) << where;
    ++tally.refused;
    return;
  }
  if (record.contains("text")) {
    try {
      EXPECT_EQ(Template::parse(source).render(variables.dict()), record["text"].get<std::string>()) << where;
    } catch (const std::exception& error) {
      ADD_FAILURE() << where << ": " << error.what();
    }
    ++tally.rendered;
    return;
  }
  const std::string python_error = record["error_type"].get<std::string>() + ": " + record["error"].get<std::string>();
  try {
    const std::string text = Template::parse(source).render(variables.dict());
    ADD_FAILURE() << where << ": rendered " << nlohmann::json(text).dump() << " where Python raised " << python_error;
  } catch (const SyntaxError&) {
    EXPECT_EQ(record["error_type"], "TemplateSyntaxError")
        << where << ": a syntax error where Python raised " << python_error;
  } catch (const RenderError& error) {
    EXPECT_NE(record["error_type"], "TemplateSyntaxError") << where;
    if (record["error_type"] == "TemplateError") {
      EXPECT_EQ(std::string(error.what()), record["error"].get<std::string>()) << where;
    }
  }
  ++tally.refused;
}

TEST(JinjaParity, ConstructCasesMatchJinja2) {
  Tally tally;
  const std::vector<nlohmann::ordered_json> records = read_records("jinja_cases.jsonl");
  for (size_t index = 0; index < records.size(); ++index) {
    const std::string source = records[index]["template"].get<std::string>();
    expect_matches(source, records[index], "case " + std::to_string(index + 1) + " " + nlohmann::json(source).dump(),
                   tally);
  }
  EXPECT_GT(tally.rendered, 90u);
  EXPECT_GT(tally.refused, 10u);
}

TEST(JinjaParity, ChatTemplatesOverGeneratedConversationsMatchJinja2) {
  Tally tally;
  std::map<std::string, std::string> sources;
  const std::vector<nlohmann::ordered_json> records = read_records("jinja_chat_renders.jsonl");
  for (size_t index = 0; index < records.size(); ++index) {
    const std::string name = records[index]["template"].get<std::string>();
    if (!sources.contains(name)) sources[name] = read_file(source_dir() / "tests/parity/text/chat_templates" / name);
    expect_matches(sources[name], records[index], name + " record " + std::to_string(index + 1), tally);
  }
  EXPECT_EQ(sources.size(), 6u);
  EXPECT_GE(tally.rendered, 200u);
  EXPECT_GT(tally.refused, 0u);
}

}  // namespace
}  // namespace s1::text::jinja
