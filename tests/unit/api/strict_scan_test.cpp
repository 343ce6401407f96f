#include "api/json.h"
#include "api/plain_json_scan.h"
#include "support/fixtures.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace s1::api {
namespace {

using Kind = TopLevelMember::Kind;

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
  const TopLevelMember expected = top_level_member(root, "model");
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
  const TopLevelMember expected = top_level_member(root, "model");
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

// Random bodies shaped like forwarded requests (a top-level object, often with "model"), each part
// usually valid and now and then carrying one of the hazards the scan must judge as the strict
// parser does: bad escapes and surrogates, ill-formed UTF-8, control bytes, odd numbers, duplicate
// names (raw or escaped), nesting around the fast path's and the strict limits, long strings
// across 64-byte blocks, a BOM, trailing bytes.
class BodyGenerator {
 public:
  explicit BodyGenerator(uint32_t seed) : random_(seed) {}

  std::string body() {
    std::string out;
    if (chance(1)) out += "\xef\xbb\xbf";
    space(out);
    if (chance(92)) {
      object(out, 0, true);
    } else {
      value(out, 0);
    }
    space(out);
    if (chance(2)) out += pick({"x", "{}", ",", "\x00", " ]"});
    return out;
  }

  // One random change: a cut, a replaced, deleted or inserted byte, or a repeated slice.
  std::string mutated(std::string text) {
    if (text.empty()) return "{";
    const size_t at = below(text.size());
    switch (below(5)) {
      case 0: return text.substr(0, at);
      case 1: text[at] = special_byte(); return text;
      case 2: return text.erase(at, 1);
      case 3: return text.insert(at, 1, special_byte());
      default: return text.insert(at, text.substr(at, 1 + below(16)));
    }
  }

 private:
  size_t below(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(random_); }
  bool chance(int percent) { return below(100) < static_cast<size_t>(percent); }
  std::string pick(std::initializer_list<const char*> choices) {
    const size_t index = below(choices.size());
    const char* choice = *(choices.begin() + index);
    return choice[0] == '\0' ? std::string(1, '\0') : std::string(choice);
  }
  char special_byte() {
    static constexpr char bytes[] = {'"', '\\', '{', '}', '[', ']', ',', ':', '\0', '\x1f', '\x7f', '\x80', '\xbf',
                                     '\xc3', '\xe2', '\xed', '\xf0', '\xf4', '\xff', ' ', '0', 'e', 'u', '-', 'n'};
    return bytes[below(sizeof bytes)];
  }

  void space(std::string& out) {
    if (chance(75)) return;
    for (size_t i = 1 + below(3); i > 0; --i) out += " \n\r\t"[below(4)];
    if (chance(1)) out += pick({"\f", "\v", "\xc2\xa0"});  // not JSON whitespace
  }

  void value(std::string& out, int depth) {
    if (chance(1)) return deep(out, depth);
    const size_t kind = below(depth > 6 ? 4 : 7);
    switch (kind) {
      case 0: return string(out, false);
      case 1: return number(out);
      case 2: out += chance(97) ? pick({"true", "false", "null"}) : pick({"tru", "nul", "True", "nulll"}); return;
      case 3: return string(out, false);
      case 4: case 5: return object(out, depth + 1, false);
      default: return array(out, depth + 1);
    }
  }

  // Nested containers around the fast path's depth limit (32) and the strict one (64).
  void deep(std::string& out, int depth) {
    static constexpr int depths[] = {30, 31, 32, 33, 62, 63, 64, 65};
    const int levels = depths[below(std::size(depths))];
    std::string closing;
    for (int i = 0; i < levels; ++i) {
      if (chance(50)) {
        out += "{\"k\":";
        closing += '}';
      } else {
        out += '[';
        closing += ']';
      }
    }
    value(out, depth + levels);
    out.append(closing.rbegin(), closing.rend());
  }

  void object(std::string& out, int depth, bool top) {
    out += '{';
    space(out);
    const size_t members = below(top ? 6 : 5);
    std::vector<std::string> names;
    for (size_t i = 0; i < members; ++i) {
      if (i > 0) {
        out += ',';
        space(out);
      }
      std::string name;
      if (top && i == 0 && chance(70)) {
        name = chance(95) ? "\"model\"" : pick({"\"\\u006dodel\"", "\"mod\\u0065l\"", "\"model \""});
      } else if (!names.empty() && chance(3)) {
        name = names[below(names.size())];  // a duplicate
      } else {
        name = pick({"\"state\"", "\"questions\"", "\"type\"", "\"a\"", "\"b\"", "\"q1\"", "\"q12\"", "\"instructions\"",
                     "\"instructions_2\"", "\"caf\xc3\xa9\"", "\"caf\\u00e9\"", "\"\"", "\"model\"", "\"x\\\"y\"",
                     "\"\xe5\xae\xa2\xe6\x88\xb7\""});
      }
      names.push_back(name);
      out += name;
      space(out);
      out += ':';
      space(out);
      if (top && name == "\"model\"" && chance(80)) {
        if (chance(85)) {
          string(out, true);
        } else {
          out += pick({"null", "7", "{\"x\":1}", "[]", "\"\""});
        }
      } else {
        value(out, depth);
      }
      space(out);
    }
    out += '}';
  }

  void array(std::string& out, int depth) {
    out += '[';
    space(out);
    for (size_t i = below(5); i > 0; --i) {
      value(out, depth);
      space(out);
      if (i > 1) {
        out += ',';
        space(out);
      }
    }
    out += ']';
  }

  void string(std::string& out, bool model) {
    out += '"';
    for (size_t pieces = below(model ? 3 : 8); pieces > 0; --pieces) piece(out, model);
    if (chance(1)) out += std::string(64 + below(3000), 'x');
    out += '"';
  }

  void piece(std::string& out, bool model) {
    const size_t kind = below(1000);
    if (kind < 450 || (model && kind < 800)) {
      for (size_t i = below(20); i > 0; --i) out += static_cast<char>('a' + below(26));
    } else if (kind < 580) {
      out += pick({"\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"});
    } else if (kind < 600) {
      out += std::string(2 * (1 + below(40)), '\\');  // runs of escaped backslashes, across blocks
    } else if (kind < 700) {
      unicode_escape(out);
    } else if (kind < 850) {
      utf8(out);
    } else if (kind < 860) {
      out += '\x7f';
    } else if (kind < 985) {
      out += pick({" ", "Ticket #4821: ", "{\"not\":\"json\"}", "[1,2]", ":", ","});
    } else {
      hazard(out);
    }
  }

  // Something the strict parser refuses inside a string.
  void hazard(std::string& out) {
    const auto byte = [&](unsigned low, unsigned high) { out += static_cast<char>(low + below(high - low + 1)); };
    switch (below(16)) {
      case 0: out += pick({"\\x", "\\'", "\\U0041", "\\u12", "\\u12g4", "\\", "\\0"}); break;
      case 1: out += static_cast<char>(below(0x20)); break;
      case 2: out += hex(0xD800 + static_cast<unsigned>(below(0x400))); break;  // a lone high surrogate
      case 3: out += hex(0xDC00 + static_cast<unsigned>(below(0x400))); break;  // a lone low surrogate
      case 4: out += hex(0xD800 + static_cast<unsigned>(below(0x400))); out += "x"; break;
      case 5: out += hex(0xD83D); out += hex(0xD83D); break;
      case 6: out += hex(0xD83D); out += "\\n"; break;
      case 7: byte(0x80, 0xBF); break;                                    // a lone continuation byte
      case 8: byte(0xC0, 0xC1); byte(0x80, 0xBF); break;                  // overlong
      case 9: out += '\xe0'; byte(0x80, 0x9F); byte(0x80, 0xBF); break;   // overlong
      case 10: out += '\xed'; byte(0xA0, 0xBF); byte(0x80, 0xBF); break;  // a surrogate
      case 11: out += '\xf4'; byte(0x90, 0xBF); byte(0x80, 0xBF); byte(0x80, 0xBF); break;  // above U+10FFFF
      case 12: out += '\xf0'; byte(0x80, 0x8F); byte(0x80, 0xBF); byte(0x80, 0xBF); break;  // overlong
      case 13: byte(0xF5, 0xFF); byte(0x80, 0xBF); byte(0x80, 0xBF); byte(0x80, 0xBF); break;
      case 14: byte(0xE1, 0xEC); byte(0x80, 0xBF); break;  // cut short
      default: byte(0xF1, 0xF3); byte(0x80, 0xBF); byte(0xC0, 0xFF); byte(0x80, 0xBF); break;
    }
  }

  std::string hex(unsigned unit) {
    static constexpr char lower[] = "0123456789abcdef";
    static constexpr char upper[] = "0123456789ABCDEF";
    const char* digits = chance(50) ? lower : upper;
    std::string escape = "\\u";
    for (int shift = 12; shift >= 0; shift -= 4) escape += digits[(unit >> shift) & 0xF];
    return escape;
  }

  void unicode_escape(std::string& out) {
    if (chance(30)) {
      out += hex(0xD800 + static_cast<unsigned>(below(0x400)));
      out += hex(0xDC00 + static_cast<unsigned>(below(0x400)));
    } else {
      unsigned unit = static_cast<unsigned>(below(0x10000));
      if (unit >= 0xD800 && unit <= 0xDFFF) unit -= 0x800;
      out += hex(chance(10) ? 0 : unit);
    }
  }

  void utf8(std::string& out) {
    const auto byte = [&](unsigned low, unsigned high) { out += static_cast<char>(low + below(high - low + 1)); };
    switch (below(10)) {
      case 0: case 1: byte(0xC2, 0xDF); byte(0x80, 0xBF); break;
      case 2: out += '\xe0'; byte(0xA0, 0xBF); byte(0x80, 0xBF); break;
      case 3: case 4: byte(0xE1, 0xEC); byte(0x80, 0xBF); byte(0x80, 0xBF); break;
      case 5: out += '\xed'; byte(0x80, 0x9F); byte(0x80, 0xBF); break;
      case 6: byte(0xEE, 0xEF); byte(0x80, 0xBF); byte(0x80, 0xBF); break;
      case 7: out += '\xf0'; byte(0x90, 0xBF); byte(0x80, 0xBF); byte(0x80, 0xBF); break;
      case 8: byte(0xF1, 0xF3); byte(0x80, 0xBF); byte(0x80, 0xBF); byte(0x80, 0xBF); break;
      default: out += '\xf4'; byte(0x80, 0x8F); byte(0x80, 0xBF); byte(0x80, 0xBF); break;
    }
  }

  void number(std::string& out) {
    if (chance(6)) {
      out += pick({"01", "-", "1.", ".5", "1e", "1e+", "-0", "0.0", "1e400", "-1e400", "1e-400", "1E5", "2.5e-3",
                   "9007199254740993", "18446744073709551616", "-9223372036854775809", "1.7976931348623157e308", "+1",
                   "0x10", "1e05", "1e100", "123456789012345e99", "0.00000000000001e-99"});
      return;
    }
    if (chance(20)) out += '-';
    const size_t digits = 1 + below(chance(80) ? 6 : 20);
    out += static_cast<char>('1' + below(9));
    for (size_t i = 1; i < digits; ++i) out += static_cast<char>('0' + below(10));
    if (chance(30)) {
      out += '.';
      for (size_t i = 1 + below(chance(80) ? 4 : 16); i > 0; --i) out += static_cast<char>('0' + below(10));
    }
    if (chance(15)) {
      out += chance(50) ? 'e' : 'E';
      if (chance(50)) out += chance(50) ? '-' : '+';
      for (size_t i = 1 + below(3); i > 0; --i) out += static_cast<char>('0' + below(10));
    }
  }

  std::mt19937 random_;
};

// The fast path against the strict parser on random bodies and their mutations; the counts show
// that both verdicts occur and that the fast path takes most valid bodies rather than declining.
TEST(StrictScan, SameVerdictsAsTheDomOnRandomBodiesAndMutations) {
  BodyGenerator generator(20261130);
  size_t valid = 0;
  size_t valid_taken = 0;
  size_t invalid = 0;
  for (int i = 0; i < 10000; ++i) {
    const std::string body = generator.body();
    std::vector<std::string> texts = {body};
    for (int m = 0; m < 6; ++m) texts.push_back(generator.mutated(m % 2 == 0 ? body : texts.back()));
    for (const std::string& text : texts) {
      const std::string what = "random body " + std::to_string(i) + ": " + text.substr(0, 200);
      expect_same_verdict(text, what);
      expect_plain_path_agrees(text, what);
      if (std::holds_alternative<Json>(parse_strict_json(text))) {
        ++valid;
        if (scan_plain_json(text, "model")) ++valid_taken;
      } else {
        ++invalid;
      }
      if (::testing::Test::HasFailure()) return;
    }
  }
  EXPECT_GT(invalid, 3000u);
  EXPECT_GT(valid, 3000u);
  EXPECT_GT(valid_taken, valid * 3 / 4) << valid_taken << " of " << valid << " valid texts took the fast path";
}

// The fast path finds the end of a string 64 bytes at a time, knowing which bytes a backslash
// escapes: every escape at every offset across a block boundary, whole and cut short.
TEST(StrictScan, SameVerdictsForEscapesAcrossBlockBoundaries) {
  const std::vector<std::string> escapes = {
      R"(\\)", R"(\")", R"(\\\")", R"(\\\\")", R"(\\\\\\)", R"(\n\t\r)", R"(\u00e9)", R"(\u00E9x)", R"(\ud83d\ude20)",
      R"(\ud83d\u0041)", R"(\udc00)", R"(\\u0041)", R"(\\\u0041)", R"(\x)", R"(\\\x)", R"(\")" "\x01", "\\\xc3\xa9",
      "\xc3\xa9\xe5\xae\xa2\xf0\x9f\x98\xa0", R"(\)"};
  for (const std::string& escape : escapes) {
    for (size_t pad = 0; pad < 140; ++pad) {
      const std::string text = R"({"s":")" + std::string(pad, 'a') + escape + R"(","model":"m","t":"\\"})";
      expect_same_verdict(text, text);
      expect_plain_path_agrees(text, text);
      const std::string cut = text.substr(0, 6 + pad + escape.size());
      expect_same_verdict(cut, cut);
      expect_plain_path_agrees(cut, cut);
    }
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

// The fast path takes the bodies a router forwards most (any valid UTF-8 and escapes in values,
// plain numbers) and leaves the strict parser everything it cannot be sure of.
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
  // Raw UTF-8 and DEL anywhere, escapes (\u too) in values other than the member's, short exponents.
  const std::vector<std::pair<std::string, std::string>> taken = {
      {"{\"model\":\"caf\xc3\xa9\",\"\xe5\xae\xa2\":\"\xf0\x9f\x98\xa0\"}", "caf\xc3\xa9"},
      {R"({"state":"Gr\u00f6\u00dfe \ud83d\ude20 \u0000\n","model":"m"})", "m"},
      {"{\"a\":\"\x7f\",\"model\":\"\"}", ""},
      {R"({"a":[1e5,-2.5E-3,0e+99],"model":"x"})", "x"}};
  for (const auto& [text, model] : taken) {
    const auto scanned = scan_plain_json(text, "model");
    ASSERT_TRUE(scanned) << text;
    EXPECT_EQ(scanned->member.text, model);
    expect_plain_path_agrees(text, text);
  }
  const std::vector<std::string> declined = {
      R"({"\u006dodel":"m"})", R"({"model":"caf\u00e9"})", R"({"model":"a\"b"})", R"({"a\"":1})",
      R"({"a":1e100})", R"({"a":1234567890123456})", R"({"a":0.1234567890123456})", R"({"a":01})", R"({"a":1.})",
      R"({"a":-})", R"({"a":.5})", R"({"a":tru})", R"({"a":1,"a":2})", R"({"a":1,})", R"([1,])", R"({"a":1} x)", "",
      "\xef\xbb\xbf{}", "{\"a\":\"\xed\xa0\x80\"}", R"({"a":"\udc00"})", R"({"a":"\ud800x"})",
      "{\"s\":" + std::string(32, '[') + std::string(32, ']') + "}"};
  for (const std::string& text : declined) EXPECT_FALSE(scan_plain_json(text, "model")) << text;
  EXPECT_TRUE(scan_plain_json("{\"s\":" + std::string(31, '[') + std::string(31, ']') + "}", "model"));
}

}  // namespace
}  // namespace s1::api
