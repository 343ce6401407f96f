#include "cli/compare_diff.h"

#include <gtest/gtest.h>

namespace s1::cli {
namespace {

bool contains(const std::vector<std::string>& lines, std::string_view needle) {
  for (const std::string& line : lines) {
    if (line.find(needle) != std::string::npos) return true;
  }
  return false;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  return out;
}

TEST(FirstDifference, Offsets) {
  EXPECT_EQ(first_difference("abc", "abc"), std::nullopt);
  EXPECT_EQ(first_difference("", ""), std::nullopt);
  EXPECT_EQ(first_difference("abc", "abd"), 2u);
  EXPECT_EQ(first_difference("xbc", "abc"), 0u);
  EXPECT_EQ(first_difference("abc", "abcd"), 3u);  // a proper prefix differs at its end
  EXPECT_EQ(first_difference("abcd", "ab"), 2u);
}

TEST(CompareResponses, IdenticalResponses) {
  const ObservedResponse a{200, "application/json", R"({"a":1})"};
  const ResponseComparison result = compare_responses(a, a);
  EXPECT_TRUE(result.identical());
  EXPECT_TRUE(result.differences.empty());
}

TEST(CompareResponses, StatusAndContentType) {
  const ResponseComparison result =
      compare_responses({200, "application/json", "{}"}, {502, "", "{}"});
  EXPECT_FALSE(result.identical());
  EXPECT_FALSE(result.status_equal);
  EXPECT_FALSE(result.content_type_equal);
  EXPECT_TRUE(result.body_equal);
  EXPECT_TRUE(contains(result.differences, "status: direct 200, via 502")) << joined(result.differences);
  EXPECT_TRUE(contains(result.differences, "content-type: direct 'application/json', via (none)"))
      << joined(result.differences);
}

TEST(CompareResponses, BodyByteOffsetWithContextAndJsonMembers) {
  const std::string direct =
      R"({"model":"mock-ramp","answers":{"q1":{"type":"noul","noul":0.7310585786300049}},"usage":{"input_tokens":12,"output_tokens":0}})";
  const std::string via =
      R"({"model":"mock-ramp","answers":{"q1":{"type":"noul","noul":0.5}},"usage":{"input_tokens":12,"output_tokens":0}})";
  const ResponseComparison result = compare_responses({200, "application/json", direct}, {200, "application/json", via});
  EXPECT_FALSE(result.body_equal);
  const std::string text = joined(result.differences);
  const size_t offset = direct.find("7310");
  EXPECT_TRUE(contains(result.differences, "bodies differ from byte " + std::to_string(offset))) << text;
  EXPECT_TRUE(contains(result.differences, "\"noul\":0.")) << text;  // common context before
  EXPECT_TRUE(contains(result.differences, "direct: 7310585786300049}}")) << text;
  EXPECT_TRUE(contains(result.differences, "via:    5}}")) << text;
  EXPECT_TRUE(contains(result.differences, "/answers/q1/noul: direct 0.7310585786300049, via 0.5")) << text;
}

TEST(CompareResponses, FormattingOnlyDifference) {
  const ResponseComparison result =
      compare_responses({200, "application/json", R"({"a":1.0})"}, {200, "application/json", R"({"a": 1.0})"});
  EXPECT_FALSE(result.identical());
  EXPECT_TRUE(contains(result.differences, "as JSON the bodies are equal")) << joined(result.differences);
}

TEST(CompareResponses, NonJsonBodiesGetOnlyTheByteDiff) {
  const ResponseComparison result = compare_responses({200, "text/plain", "hello world"}, {200, "text/plain", "hello there"});
  EXPECT_TRUE(contains(result.differences, "bodies differ from byte 6"));
  EXPECT_FALSE(contains(result.differences, "JSON"));
}

TEST(JsonMemberDiff, MissingExtraTypeOrderAndArrays) {
  auto lines = json_member_diff(R"({"a":1,"b":[1,2,3],"c":{"x":true},"d":"s","e":1,"f":2})",
                                R"({"a":1,"b":[1,5],"c":{"x":"true"},"z":null,"f":2,"e":1})");
  ASSERT_TRUE(lines.has_value());
  const std::string text = joined(*lines);
  EXPECT_TRUE(contains(*lines, "/b/1: direct 2, via 5")) << text;
  EXPECT_TRUE(contains(*lines, "/b: direct has 3 entries, via has 2")) << text;
  EXPECT_TRUE(contains(*lines, "/c/x: direct has boolean true, via has string \"true\"")) << text;
  EXPECT_TRUE(contains(*lines, "/d: only in direct (\"s\")")) << text;
  EXPECT_TRUE(contains(*lines, "/z: only in via (null)")) << text;

  auto order = json_member_diff(R"({"a":1,"b":2})", R"({"b":2,"a":1})");
  ASSERT_TRUE(order.has_value());
  ASSERT_EQ(order->size(), 1u);
  EXPECT_EQ((*order)[0], R"(/: member order differs: direct ["a","b"], via ["b","a"])");
}

TEST(JsonMemberDiff, PointerEscapingAndUnicodeKeys) {
  auto lines = json_member_diff(R"({"a/b":{"c~d":1},"ключ":"é"})", R"({"a/b":{"c~d":2},"ключ":"e"})");
  ASSERT_TRUE(lines.has_value());
  EXPECT_TRUE(contains(*lines, "/a~1b/c~0d: direct 1, via 2")) << joined(*lines);
  EXPECT_TRUE(contains(*lines, "/ключ: direct \"é\", via \"e\"")) << joined(*lines);
}

TEST(JsonMemberDiff, NotJsonAndLimit) {
  EXPECT_FALSE(json_member_diff("{", "{}").has_value());
  EXPECT_FALSE(json_member_diff("{}", "nope").has_value());
  std::string a = "[", b = "[";
  for (int i = 0; i < 30; ++i) {
    a += (i ? "," : "") + std::to_string(i);
    b += (i ? "," : "") + std::to_string(i + 100);
  }
  auto lines = json_member_diff(a + "]", b + "]", 5);
  ASSERT_TRUE(lines.has_value());
  ASSERT_EQ(lines->size(), 6u);
  EXPECT_EQ(lines->back(), "... 25 more");
}

TEST(DescribeByteDifference, KeepsUtf8WholeAndEscapesControls) {
  // The bodies differ in the second byte of "é" (C3 A9) vs "è" (C3 A8): the tails start at the character.
  const auto lines = describe_byte_difference("caf\xc3\xa9 ok", "caf\xc3\xa8 ok");
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "bodies differ from byte 4 (direct 8 bytes, via 8 bytes)");
  EXPECT_EQ(lines[1], "  common: caf");
  EXPECT_EQ(lines[2], "  direct: \xc3\xa9 ok");
  EXPECT_EQ(lines[3], "  via:    \xc3\xa8 ok");

  const auto shorter = describe_byte_difference("abc", "abc\n\x01");
  ASSERT_EQ(shorter.size(), 4u);
  EXPECT_EQ(shorter[2], "  direct: (end of body)");
  EXPECT_EQ(shorter[3], "  via:    \\n\\x01");
  EXPECT_TRUE(describe_byte_difference("same", "same").empty());
}

TEST(DescribeByteDifference, LongBodiesAreCut) {
  const std::string prefix(100, 'a');
  const auto lines = describe_byte_difference(prefix + "X" + std::string(100, 'b'), prefix + "Y" + std::string(100, 'c'), 10);
  EXPECT_EQ(lines[1], "  common: …aaaaaaaaaa");
  EXPECT_EQ(lines[2], "  direct: Xbbbbbbbbb…");
  EXPECT_EQ(lines[3], "  via:    Yccccccccc…");
}

TEST(EscapeForDisplay, Cases) {
  EXPECT_EQ(escape_for_display("plain"), "plain");
  EXPECT_EQ(escape_for_display("tab\tnl\ncr\r"), "tab\\tnl\\ncr\\r");
  EXPECT_EQ(escape_for_display(std::string("nul\0x", 5)), "nul\\x00x");
  EXPECT_EQ(escape_for_display("\x7f"), "\\x7f");
  EXPECT_EQ(escape_for_display("\xc2\x85"), "\\u0085");          // C1 control
  EXPECT_EQ(escape_for_display("😀 日本"), "😀 日本");               // valid UTF-8 kept
  EXPECT_EQ(escape_for_display("\xff\xc3"), "\\xff\\xc3");         // invalid bytes escaped
  EXPECT_EQ(escape_for_display("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // encoded surrogate
}

}  // namespace
}  // namespace s1::cli
