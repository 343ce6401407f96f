#include "decide/prompt.h"

#include <gtest/gtest.h>

namespace s1::decide {
namespace {

TEST(PythonCompactJson, MatchesPythonJsonDumps) {
  // Expected strings are what json.dumps(value, ensure_ascii=False, separators=(",", ":")) prints.
  const auto value = api::Json::parse(
      R"({"b":1,"a":[1.0,2.5,1e-05,0.0001,1e16,123456789012345.6,-0.0,1e-7,true,null],"t":"caf\u00e9 \"q\" \n\u0001"})");
  EXPECT_EQ(python_compact_json(value),
            "{\"b\":1,\"a\":[1.0,2.5,1e-05,0.0001,1e+16,123456789012345.6,-0.0,1e-07,true,null],"
            "\"t\":\"caf\xc3\xa9 \\\"q\\\" \\n\\u0001\"}");
  EXPECT_EQ(python_compact_json(api::Json::parse("[1e15, 1.5e16, 100.0, 3.14e-5]")),
            "[1000000000000000.0,1.5e+16,100.0,3.14e-05]");
}

TEST(DefaultPrompt, RendersLabelsAndDirectives) {
  api::Question choice;
  choice.type = api::QuestionType::choice;
  choice.instructions = "Team?";
  choice.options = {{"billing", "Payments"}, {"technical", nullptr}, {"sales", api::Json::parse(R"({"scope":"pricing"})")}};
  EXPECT_EQ(default_question_block(choice),
            "Question: Team?\nA: billing - Payments\nB: technical\nC: sales - {\"scope\":\"pricing\"}\n"
            "Answer with one letter.");
  EXPECT_EQ(letter_label(0), "A");
  EXPECT_EQ(letter_label(25), "Z");
  EXPECT_EQ(letter_label(26), "AA");
  EXPECT_EQ(letter_label(27), "AB");
  EXPECT_EQ(letter_label(254), "IU");
}

}  // namespace
}  // namespace s1::decide
