#include "api/request.h"
#include "api/response.h"

#include <gtest/gtest.h>

namespace s1::api {
namespace {

Result<DecisionRequest> parse(std::string_view body, bool has_default = true) {
  return parse_system_one_request(body, RequestLimits{64, has_default});
}

// detail[0] of a 422, as "type@loc/parts".
std::string first_issue(std::string_view body, bool has_default = true) {
  auto result = parse(body, has_default);
  if (result.ok()) return "ok";
  const ApiError& error = result.error();
  if (error.code != ErrorCode::validation) return std::string(error_type(error.code));
  std::string out = error.issues.front().type + "@";
  for (const auto& part : error.issues.front().location) {
    out += "/";
    out += std::holds_alternative<std::string>(part) ? std::get<std::string>(part)
                                                       : std::to_string(std::get<int64_t>(part));
  }
  return out;
}

std::string with_questions(std::string_view questions, std::string_view extra = "") {
  return std::string(R"({"model":"m","state":"Ticket",)") + std::string(extra) + R"("questions":)" +
         std::string(questions) + "}";
}

constexpr std::string_view noul = R"({"type":"noul","instructions":"Refund?"})";

TEST(SystemOneRequest, ParsesAllQuestionTypes) {
  auto result = parse(R"({"model":"m","state":{"a":1},"questions":{
    "z":{"type":"noul","instructions":"Refund?","criteria":{"true":"x","false":{"n":1}}},
    "a":{"type":"choice","instructions":"Team?","criteria":{"billing":"Payments","technical":null}},
    "m":{"type":"score","criteria":["calm",{"x":1},["y"]]}}})");
  ASSERT_TRUE(result.ok());
  const DecisionRequest& request = result.value();
  EXPECT_EQ(*request.model, "m");
  ASSERT_EQ(request.questions.size(), 3U);
  EXPECT_EQ(request.questions[0].key, "z");
  EXPECT_EQ(request.questions[0].noul_true, "x");
  EXPECT_EQ(request.questions[1].options[1].name, "technical");
  EXPECT_TRUE(request.questions[1].options[1].description.is_null());
  EXPECT_EQ(request.questions[2].levels.size(), 3U);
  EXPECT_TRUE(request.questions[2].instructions.is_null());
}

TEST(SystemOneRequest, RefusesStructuralProblemsWithTheirLocation) {
  EXPECT_EQ(first_issue(R"({"model":"m","state":)"), "json_invalid@");
  EXPECT_EQ(first_issue("[]"), "dict_type@");
  EXPECT_EQ(first_issue(R"({"questions":{"q":{"type":"noul"}}})"), "missing@/state");
  EXPECT_EQ(first_issue(R"({"state":null,"questions":{"q":{"type":"noul"}}})"), "value_type@/state");
  EXPECT_EQ(first_issue(R"({"state":42,"questions":{"q":{"type":"noul"}}})"), "value_type@/state");
  EXPECT_EQ(first_issue(R"({"state":"","questions":{"q":{"type":"noul"}}})"), "string_too_short@/state");
  EXPECT_EQ(first_issue(R"({"state":{},"questions":{"q":{"type":"noul"}}})"), "too_short@/state");
  EXPECT_EQ(first_issue(R"({"state":[],"questions":{"q":{"type":"noul"}}})"), "too_short@/state");
  EXPECT_EQ(first_issue(R"({"state":"x"})"), "missing@/questions");
  EXPECT_EQ(first_issue(with_questions("{}")), "too_short@/questions");
  EXPECT_EQ(first_issue(with_questions("[1]")), "dict_type@/questions");
  EXPECT_EQ(first_issue(R"({"state":null,"questions":{"q":{"type":"span"}}})"), "value_type@/state");
}

TEST(SystemOneRequest, RefusesBadQuestions) {
  EXPECT_EQ(first_issue(with_questions(R"({"":{"type":"noul"}})")), "string_too_short@/questions/");
  EXPECT_EQ(first_issue(with_questions(R"({"a\nb":{"type":"noul"}})")), "string_pattern_mismatch@/questions/a\nb");
  EXPECT_EQ(first_issue(with_questions(R"({"q":"Refund?"})")), "dict_type@/questions/q");
  EXPECT_EQ(first_issue(with_questions(R"({"q":{"instructions":"x"}})")), "missing@/questions/q/type");
  for (const char* type : {"\"span\"", "\"Choice\"", "7", "null"}) {
    EXPECT_EQ(first_issue(with_questions(std::string(R"({"q":{"type":)") + type + "}}")),
              "union_tag_invalid@/questions/q/type");
  }
  EXPECT_EQ(first_issue(with_questions(R"({"q":{"type":"noul","name":"n"}})")), "extra_forbidden@/questions/q/name");
  EXPECT_EQ(first_issue(with_questions(R"({"q":{"type":"noul","instructions":5}})")),
            "value_type@/questions/q/instructions");
  EXPECT_EQ(first_issue(with_questions(R"({"q":{"type":"choice"}})")), "missing@/questions/q/criteria");
  EXPECT_EQ(first_issue(with_questions(R"({"q":{"type":"choice","criteria":{}}})")), "too_short@/questions/q/criteria");
  EXPECT_EQ(first_issue(with_questions(R"({"q":{"type":"choice","criteria":["a"]}})")), "dict_type@/questions/q/criteria");
  EXPECT_EQ(first_issue(with_questions(R"({"q":{"type":"choice","criteria":{"a":true}}})")),
            "value_type@/questions/q/criteria/a");
  EXPECT_EQ(first_issue(with_questions(R"({"q":{"type":"choice","criteria":{"":null}}})")),
            "string_too_short@/questions/q/criteria/");
  EXPECT_EQ(first_issue(with_questions(R"({"q":{"type":"choice","criteria":{"a\tb":null}}})")),
            "string_pattern_mismatch@/questions/q/criteria/a\tb");
  EXPECT_EQ(first_issue(with_questions(R"({"q":{"type":"score","criteria":["only"]}})")), "too_short@/questions/q/criteria");
  EXPECT_EQ(first_issue(with_questions(R"({"q":{"type":"score","criteria":{"0":"low","1":"high"}}})")),
            "list_type@/questions/q/criteria");
  EXPECT_EQ(first_issue(with_questions(R"({"q":{"type":"score","criteria":["low",null]}})")),
            "value_type@/questions/q/criteria/1");
  EXPECT_EQ(first_issue(with_questions(R"({"q":{"type":"score","criteria":["low",""]}})")),
            "string_too_short@/questions/q/criteria/1");
  EXPECT_EQ(first_issue(with_questions(R"({"q":{"type":"noul","criteria":{"true":"x","maybe":"y"}}})")),
            "extra_forbidden@/questions/q/criteria/maybe");
  EXPECT_EQ(first_issue(with_questions(R"({"q":{"type":"noul","instructions":"x","criteria":{"true":3}}})")),
            "value_type@/questions/q/criteria/true");
  EXPECT_EQ(first_issue(with_questions(R"({"q":{"type":"noul","criteria":"yes"}})")), "dict_type@/questions/q/criteria");
}

TEST(SystemOneRequest, NullNoulSidesAreUndescribed) {
  auto request = parse(with_questions(R"({"q":{"type":"noul","instructions":"x","criteria":{"true":null,"false":"no"}}})"));
  ASSERT_TRUE(request.ok());
  EXPECT_TRUE(request->questions[0].noul_true.is_null());
  EXPECT_EQ(request->questions[0].noul_false, "no");
}

TEST(SystemOneRequest, ANoulWithNothingToDecideIsRefused) {
  for (const char* question : {R"({"type":"noul"})", R"({"type":"noul","instructions":null})",
                               R"({"type":"noul","criteria":null})", R"({"type":"noul","criteria":{}})",
                               R"({"type":"noul","instructions":null,"criteria":{"true":null,"false":null}})"}) {
    EXPECT_EQ(first_issue(with_questions("{\"q\":" + std::string(question) + "}")), "missing@/questions/q/instructions")
        << question;
  }
  for (const char* question : {R"({"type":"noul","instructions":""})", R"({"type":"noul","criteria":{"true":"x"}})",
                               R"({"type":"noul","criteria":{"false":{"n":1}}})"}) {
    EXPECT_EQ(first_issue(with_questions("{\"q\":" + std::string(question) + "}")), "ok") << question;
  }
  // Reference files recorded under contract v1 replay with the rule off.
  EXPECT_TRUE(parse_system_one_request(with_questions(R"({"q":{"type":"noul"}})"), RequestLimits{64, true, false}).ok());
  // A broken criteria object is reported itself, not as missing instructions.
  EXPECT_EQ(first_issue(with_questions(R"({"q":{"type":"noul","criteria":{"maybe":"y"}}})")),
            "extra_forbidden@/questions/q/criteria/maybe");
}

TEST(SystemOneRequest, LimitsCounts) {
  EXPECT_EQ(RequestLimits{}.max_questions, 400u);
  std::string many = "{";
  for (int i = 0; i < 65; ++i) many += std::string(i ? "," : "") + "\"q" + std::to_string(i) + "\":" + std::string(noul);
  EXPECT_EQ(first_issue(with_questions(many + "}")), "too_long@/questions");
  std::string options = "{";
  for (int i = 0; i < 256; ++i) options += std::string(i ? "," : "") + "\"o" + std::to_string(i) + "\":null";
  EXPECT_EQ(first_issue(with_questions(R"({"q":{"type":"choice","criteria":)" + options + "}}}")),
            "too_long@/questions/q/criteria");
  EXPECT_EQ(first_issue(with_questions(R"({"q":{"type":"score","criteria":["0","1","2","3","4","5","6","7","8","9","10"]}})")),
            "too_long@/questions/q/criteria");
  std::string long_key(257, 'k');
  EXPECT_EQ(first_issue(with_questions("{\"" + long_key + "\":" + std::string(noul) + "}")),
            "string_too_long@/questions/" + long_key);
  std::string accented_key;
  for (int i = 0; i < 256; ++i) accented_key += "\xc3\xa9";
  EXPECT_EQ(first_issue(with_questions("{\"" + accented_key + "\":" + std::string(noul) + "}")), "ok");
}

TEST(SystemOneRequest, ModelAndThinkingRules) {
  EXPECT_EQ(first_issue(R"({"model":5,"state":"x","questions":{"q":{"type":"noul"}}})"), "string_type@/model");
  EXPECT_EQ(first_issue(R"({"model":"","state":"x","questions":{"q":{"type":"noul"}}})"), "string_too_short@/model");
  EXPECT_EQ(first_issue(R"({"state":"x","questions":{"q":{"type":"noul"}}})", false), "missing@/model");
  EXPECT_EQ(first_issue(R"({"model":null,"state":"x","questions":{"q":{"type":"noul","instructions":"q"}}})", true),
            "ok");
  EXPECT_EQ(first_issue(with_questions("{\"q\":" + std::string(noul) + "}", R"("thinking":true,)")), "literal_error@/thinking");
  EXPECT_EQ(first_issue(with_questions("{\"q\":" + std::string(noul) + "}", R"("thinking":"auto",)")), "literal_error@/thinking");
  for (const char* ok : {R"("thinking":false,)", R"("thinking":{"enabled":false},)", R"("images":[],)", R"("assets":{},)",
                         R"("temperature":0.01,"keep_alive":"5m",)"}) {
    EXPECT_EQ(first_issue(with_questions("{\"q\":" + std::string(noul) + "}", ok)), "ok") << ok;
  }
}

TEST(SystemOneRequest, MediaIsCheckedAfterSchema) {
  // Collected here, decoded (or refused for a text-only model) once the model is known.
  auto images = parse(with_questions("{\"q\":" + std::string(noul) + "}", R"("images":["iVBORw0KGgo="],)"));
  ASSERT_TRUE(images.ok());
  ASSERT_EQ(images->media.size(), 1u);
  EXPECT_EQ(images->media[0].bytes, "\x89PNG\r\n\x1a\n");
  EXPECT_EQ(first_issue(with_questions("{\"q\":" + std::string(noul) + "}", R"("video":"x",)")), "unsupported_media");
  EXPECT_EQ(first_issue(R"({"model":"m","state":["look:",{"type":"image_url","image_url":{"url":"data:"}}],
                           "questions":{"q":{"type":"noul","instructions":"Red?"}}})"),
            "invalid_media");
  // Schema problems come first (check order 6 before 7).
  EXPECT_EQ(first_issue(R"({"model":"m","state":"","images":["x"],"questions":{"q":{"type":"noul"}}})"),
            "string_too_short@/state");
}

TEST(SystemOneResponse, SerialisesInRequestOrderWithExactNumbers) {
  auto request = parse(R"({"model":"m","state":"s","questions":{
    "z":{"type":"noul","instructions":"?"},
    "a":{"type":"choice","criteria":{"only":null}},
    "m":{"type":"score","criteria":[{"b":1,"a":[true,null]},"mid",["x"]]}}})");
  ASSERT_TRUE(request.ok());
  DecisionResult result;
  result.model = "m";
  result.input_tokens = 12;
  Answer noul_answer{QuestionType::noul, {0.7310585786300049, 0.2689414213699951}};
  Answer choice_answer{QuestionType::choice, {1.0}, 0, 1.0};
  Answer score_answer{QuestionType::score, {0.5, 0.25, 0.25}, 0, 0.25, 0.75};
  result.answers = {noul_answer, choice_answer, score_answer};
  EXPECT_EQ(serialize_system_one_response(request.value(), result),
            R"({"model":"m","answers":{"z":{"type":"noul","noul":0.7310585786300049},)"
            R"("a":{"type":"choice","choice":"only","confidence":1.0,"probabilities":{"only":1.0}},)"
            R"("m":{"type":"score","score":0.75,"confidence":0.25,"legend":{"0":{"b":1,"a":[true,null]},"1":"mid","2":["x"]},)"
            R"("probabilities":{"0":0.5,"1":0.25,"2":0.25}}},"usage":{"input_tokens":12,"output_tokens":0}})");
}

}  // namespace
}  // namespace s1::api
