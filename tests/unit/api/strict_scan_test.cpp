#include "api/json.h"
#include "api/plain_json_scan.h"
#include "support/fixtures.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace s1::api {
namespace {

using Kind = TopLevelMember::Kind;

// What the DOM says about the top-level `model` member, in the scan's terms.
TopLevelMember model_of(const Json& root) {
  TopLevelMember member;
  if (!root.is_object()) return member;
  const auto found = root.find("model");
  if (found == root.end()) return member;
  if (found->is_null()) {
    member.kind = Kind::null;
  } else if (found->is_string()) {
    member.kind = Kind::string;
    member.text = found->get<std::string>();
  } else {
    member.kind = Kind::other;
  }
  return member;
}

// The scan and the DOM parser give the same verdict, the same message and the same `model`.
void expect_same_verdict(const std::string& text, const std::string& what) {
  const auto dom = parse_strict_json(text);
  const auto scan = scan_strict_json(text, "model");
  ASSERT_EQ(dom.index(), scan.index()) << what;
  if (const auto* error = std::get_if<JsonSyntaxError>(&dom)) {
    EXPECT_EQ(error->message, std::get<JsonSyntaxError>(scan).message) << what;
    return;
  }
  const Json& root = std::get<Json>(dom);
  const StrictJsonScan& scanned = std::get<StrictJsonScan>(scan);
  EXPECT_EQ(scanned.object, root.is_object()) << what;
  const TopLevelMember expected = model_of(root);
  EXPECT_EQ(scanned.member.kind, expected.kind) << what;
  EXPECT_EQ(scanned.member.text, expected.text) << what;
}

// The plain fast path either declines or agrees with the DOM: it never accepts an invalid text.
void expect_plain_path_agrees(const std::string& text, const std::string& what) {
  const auto plain = scan_plain_json(text, "model");
  if (!plain) return;
  const auto dom = parse_strict_json(text);
  ASSERT_TRUE(std::holds_alternative<Json>(dom)) << what << ": " << std::get<JsonSyntaxError>(dom).message;
  const Json& root = std::get<Json>(dom);
  EXPECT_EQ(plain->object, root.is_object()) << what;
  const TopLevelMember expected = model_of(root);
  EXPECT_EQ(plain->member.kind, expected.kind) << what;
  EXPECT_EQ(plain->member.text, expected.text) << what;
}

// The body, every prefix of it and single-byte mutations at up to 64 positions: most of these are
// broken in a different place, which is where the two handlers could disagree.
void expect_same_verdicts_around(const std::string& body, const std::string& name) {
  expect_same_verdict(body, name);
  expect_plain_path_agrees(body, name);
  const size_t step = std::max<size_t>(1, body.size() / 64);
  for (size_t at = 0; at < body.size(); at += step) {
    expect_same_verdict(body.substr(0, at), name + " cut at " + std::to_string(at));
    expect_plain_path_agrees(body.substr(0, at), name + " cut at " + std::to_string(at));
    for (const char replacement : {'"', '}', ',', '\\', '\xff', 'N', '[', '\x01'}) {
      std::string mutated = body;
      mutated[at] = replacement;
      expect_same_verdict(mutated, name + " byte " + std::to_string(at) + " = " + std::to_string(replacement));
      expect_plain_path_agrees(mutated, name + " byte " + std::to_string(at) + " = " + std::to_string(replacement));
    }
  }
}

std::string from_hex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
  return out;
}

TEST(StrictScan, SameVerdictsAsTheDomOnTheConformanceBodies) {
  // Written by tests/conformance/write_body_corpus.py from tests/conformance/cases.
  std::ifstream in(test::fixture_dir("strict-json") / "conformance_bodies.hex");
  ASSERT_TRUE(in) << "missing tests/fixtures/strict-json/conformance_bodies.hex";
  size_t bodies = 0;
  for (std::string line; std::getline(in, line);) {
    const size_t space = line.find(' ');
    ASSERT_NE(space, std::string::npos);
    expect_same_verdicts_around(from_hex(std::string_view(line).substr(space + 1)), line.substr(0, space));
    ++bodies;
  }
  EXPECT_GT(bodies, 100u);
}

TEST(StrictScan, SameVerdictsAsTheDomOnTheFuzzCorpus) {
  const auto corpus = test::fixture_dir("../fuzz/corpus/request");
  size_t seeds = 0;
  for (const auto& entry : std::filesystem::directory_iterator(corpus)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    expect_same_verdicts_around(text.str(), entry.path().filename().string());
    ++seeds;
  }
  EXPECT_GT(seeds, 0u);
}

TEST(StrictScan, SameVerdictsOnEveryRuleOfTheContract) {
  const std::vector<std::string> texts = {
      R"({"a":1,"a":2})", R"({"a":1,"\u0061":2})", R"({"x":{"a":1,"a":2}})", R"({"x":[{"a":1},{"a":1}]})",
      "{\"a\":\"\xff\"}", "{\"a\":\"\xc0\xaf\"}", "{\"a\":\"\xed\xa0\x80\"}", R"({"a":"\ud800"})",
      R"({"a":"\udc00"})", R"({"a":NaN})", R"({"a":-Infinity})", R"({"a":1e400})", R"({"a":1e-400})",
      R"({"a":1} x)", R"({}{})", "", "   ", "\xef\xbb\xbf{}", R"({"a":1)", "{\"a\":\"tab\there\"}",
      "[1,2]", "\"model\"", "null", R"({"model":null})", R"({"model":7})", R"({"model":{"x":1}})",
      R"({"model":[]})", R"({"\u006dodel":"m"})", R"({"model":"a\"b\u00e9"})", R"({"model":"m","model":"n"})",
      R"({"x":{"model":"nested"},"y":[{"model":"n"}]})", R"({"model":"m","questions":{}})",
      "{\"s\":" + std::string(63, '[') + std::string(63, ']') + "}",
      "{\"s\":" + std::string(64, '[') + std::string(64, ']') + "}", std::string(100000, '['),
  };
  for (const std::string& text : texts) {
    expect_same_verdict(text, text.substr(0, 80));
    expect_plain_path_agrees(text, text.substr(0, 80));
  }
}

TEST(StrictScan, ReportsOnlyTheTopLevelMember) {
  const auto nested = scan_strict_json(R"({"x":{"model":"inner"},"state":"s"})", "model");
  ASSERT_TRUE(std::holds_alternative<StrictJsonScan>(nested));
  EXPECT_TRUE(std::get<StrictJsonScan>(nested).object);
  EXPECT_EQ(std::get<StrictJsonScan>(nested).member.kind, Kind::absent);

  const auto escaped = scan_strict_json(R"({"state":{"model":1},"\u006dodel":"caf\u00e9"})", "model");
  ASSERT_TRUE(std::holds_alternative<StrictJsonScan>(escaped));
  EXPECT_EQ(std::get<StrictJsonScan>(escaped).member.kind, Kind::string);
  EXPECT_EQ(std::get<StrictJsonScan>(escaped).member.text, "caf\xc3\xa9");

  const auto array = scan_strict_json(R"(["model","m"])", "model");
  ASSERT_TRUE(std::holds_alternative<StrictJsonScan>(array));
  EXPECT_FALSE(std::get<StrictJsonScan>(array).object);
  EXPECT_EQ(std::get<StrictJsonScan>(array).member.kind, Kind::absent);
}

TEST(StrictScan, RefusesADuplicateModelAndObjectsTooDeep) {
  EXPECT_TRUE(std::holds_alternative<JsonSyntaxError>(scan_strict_json(R"({"model":"a","model":"a"})", "model")));
  const std::string deep = "{\"s\":" + std::string(64, '{') + std::string(64, '}') + "}";
  EXPECT_TRUE(std::holds_alternative<JsonSyntaxError>(scan_strict_json(deep, "model")));
}

// The fast path takes the bodies a router forwards most (printable ASCII, plain numbers) and leaves
// the strict parser everything it cannot be sure of.
TEST(PlainScan, TakesTypicalBodiesAndDeclinesWhatItCannotBeSureOf) {
  const std::string typical =
      R"({"model":"mock-ramp","state":"Ticket: I was charged twice for my subscription this month and nobody answers.",)"
      R"("questions":{"team":{"type":"choice","instructions":"Which team?","criteria":{"billing":"Payments","technical":null,)"
      R"("sales":{"scope":"pricing"}}},"refund":{"type":"noul","instructions":"Refund?"},"anger":{"type":"score",)"
      R"("instructions":"How angry?","criteria":["calm","annoyed","furious"]}},"temperature":0.5,"n":-12,"tab":"a\tb\"c"})";
  const auto plain = scan_plain_json(" \n" + typical + "\r\n", "model");
  ASSERT_TRUE(plain);
  EXPECT_TRUE(plain->object);
  EXPECT_EQ(plain->member.kind, Kind::string);
  EXPECT_EQ(plain->member.text, "mock-ramp");
  expect_plain_path_agrees(typical, "typical");
  EXPECT_EQ(scan_plain_json(R"({"state":"s"})", "model")->member.kind, Kind::absent);
  EXPECT_EQ(scan_plain_json(R"({"model":null,"x":[]})", "model")->member.kind, Kind::null);
  EXPECT_EQ(scan_plain_json(R"({"model":{"model":1}})", "model")->member.kind, Kind::other);
  EXPECT_FALSE(scan_plain_json("[1,2]", "model")->object);
  const std::vector<std::string> declined = {
      R"({"\u006dodel":"m"})", R"({"model":"caf\u00e9"})", R"({"model":"a\"b"})", R"({"a\"":1})",
      "{\"model\":\"caf\xc3\xa9\"}", "{\"a\":\"\x7f\"}", R"({"a":1e5})", R"({"a":1234567890123456})",
      R"({"a":0.1234567890123456})", R"({"a":01})", R"({"a":1.})", R"({"a":-})", R"({"a":.5})", R"({"a":tru})",
      R"({"a":1,"a":2})", R"({"a":1,})", R"([1,])", R"({"a":1} x)", "", "\xef\xbb\xbf{}",
      "{\"s\":" + std::string(32, '[') + std::string(32, ']') + "}"};
  for (const std::string& text : declined) EXPECT_FALSE(scan_plain_json(text, "model")) << text;
  EXPECT_TRUE(scan_plain_json("{\"s\":" + std::string(31, '[') + std::string(31, ']') + "}", "model"));
}

}  // namespace
}  // namespace s1::api
