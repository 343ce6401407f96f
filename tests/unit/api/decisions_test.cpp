#include "api/openai_decisions.h"

#include <gtest/gtest.h>

namespace s1::api {
namespace {

Result<DecisionsRequest> parse(std::string_view body) { return parse_decisions_request(body, RequestLimits{64, true}); }

// (status code, param) of the OpenAI envelope for a failing body.
std::string openai_error(std::string_view body) {
  auto result = parse(body);
  if (result.ok()) return "ok";
  return openai_error_body(result.error());
}

constexpr std::string_view example = R"({"model":"mock-ramp","input":"I was charged twice.","questions":[
 {"type":"choice","name":"category","instructions":"Classify.","choices":[{"value":"billing"},{"value":"technical","description":"Errors"}]},
 {"type":"predicate","name":"dup","instructions":"Charged more than once."},
 {"type":"score","instructions":"How angry?","levels":[{"label":"calm"},{"label":"annoyed"},{"label":"furious","description":"insults"}]}]})";

TEST(DecisionsRequest, MapsOntoTheSystemOnePipeline) {
  auto result = parse(example);
  ASSERT_TRUE(result.ok());
  const DecisionRequest& pipeline = result->pipeline;
  EXPECT_EQ(pipeline.state, "I was charged twice.");
  ASSERT_EQ(pipeline.questions.size(), 3U);
  EXPECT_EQ(pipeline.questions[0].key, "0");
  EXPECT_EQ(pipeline.questions[0].options[1].name, "technical");
  EXPECT_EQ(pipeline.questions[0].options[1].description, "Errors");
  EXPECT_EQ(pipeline.questions[1].type, QuestionType::noul);
  EXPECT_EQ(pipeline.questions[2].levels[2], "furious - insults");
  EXPECT_EQ(result->questions[2].level_labels[2], "furious");
}

TEST(DecisionsRequest, JoinsMessageTexts) {
  auto result = parse(R"({"input":[{"role":"user","content":[{"type":"input_text","text":"A"},{"type":"input_text","text":"B"}]},
                                   {"role":"user","type":"message","content":"C"}],
                          "questions":[{"type":"predicate","instructions":""}]})");
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->pipeline.state, "A\n\nB\n\nC");
}

std::string questions_with(std::string_view input) {
  return R"({"input":)" + std::string(input) + R"(,"questions":[{"type":"predicate","instructions":""}]})";
}

TEST(DecisionsRequest, OtherRolesRenderTheStateAsRoleContentObjects) {
  auto result = parse(questions_with(R"([
    {"role":"system","content":"Be strict."},
    {"role":"developer","type":"message","content":[{"type":"input_text","text":"Rules"},{"type":"input_json","data":{"max":3,"name":"é"}}]},
    {"role":"user","content":[{"type":"input_text","text":"Refund?","prompt_cache_breakpoint":{"mode":"explicit"}},{"type":"input_json","data":[{"a":1.5}]}]},
    {"role":"assistant","phase":"final_answer","content":[{"type":"output_text","text":"No."},{"type":"refusal","refusal":"Cannot."}]}])"));
  ASSERT_TRUE(result.ok()) << openai_error_body(result.error());
  EXPECT_EQ(result->pipeline.state, Json::parse(R"([{"role":"system","content":"Be strict."},
    {"role":"developer","content":"Rules\n\n{\"max\":3,\"name\":\"é\"}"},
    {"role":"user","content":"Refund?\n\n[{\"a\":1.5}]"},
    {"role":"assistant","content":"No.\n\nCannot."}])"));
}

TEST(DecisionsRequest, UserJsonPartsJoinAsCompactText) {
  auto result = parse(questions_with(R"([{"role":"user","content":[{"type":"input_json","data":{"b":[1,null,true],"a":"x y"}}]}])"));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->pipeline.state, R"({"b":[1,null,true],"a":"x y"})");
}

TEST(DecisionsRequest, InstructionPartsAreJoined) {
  auto result = parse(R"({"input":"x","questions":[{"type":"predicate","instructions":[{"type":"input_text","text":"Is it"},{"type":"input_json","data":{"k":1}}]}],
                          "prompt_cache_key":"k","prompt_cache_options":{"mode":"implicit","ttl":"30m"},"safety_identifier":"u1","metadata":{"a":"b"}})");
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->pipeline.questions[0].instructions, "Is it\n\n{\"k\":1}");
  EXPECT_NE(openai_error(R"({"input":"x","questions":[{"type":"predicate","instructions":[{"type":"input_image","image_url":"http://x/a.png"}]}]})")
                .find(R"("param":"questions[0].instructions[0]","code":"unsupported_media")"),
            std::string::npos);
  EXPECT_NE(openai_error(R"({"input":"x","questions":[{"type":"predicate","instructions":[]}]})")
                .find(R"("param":"questions[0].instructions","code":"too_short")"),
            std::string::npos);
  EXPECT_NE(openai_error(R"({"input":"x","questions":[{"type":"predicate","instructions":5}]})")
                .find(R"("param":"questions[0].instructions","code":"value_type")"),
            std::string::npos);
}

TEST(DecisionsRequest, ToolItemsAreRefusedByName) {
  const std::string error = openai_error(questions_with(
      R"(["hi",{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}])"));
  EXPECT_NE(error.find(R"("code":"dict_type")"), std::string::npos) << error;
  for (const char* type : {"function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output"}) {
    const std::string refused = openai_error(questions_with(
        std::string(R"([{"role":"user","content":"hi"},{"type":")") + type + R"(","call_id":"c","output":"x"}])"));
    EXPECT_NE(refused.find(R"("param":"input[1]","code":"unsupported_input")"), std::string::npos) << refused;
    EXPECT_NE(refused.find(std::string("input[1]: ") + type), std::string::npos) << refused;
  }
}

TEST(DecisionsRequest, PartsFollowTheirRole) {
  EXPECT_NE(openai_error(questions_with(R"([{"role":"assistant","content":[{"type":"input_text","text":"x"}]}])"))
                .find(R"("param":"input[0].content[0].type","code":"union_tag_invalid")"),
            std::string::npos);
  EXPECT_NE(openai_error(questions_with(R"([{"role":"system","content":[{"type":"input_image","image_url":"data:"}]}])"))
                .find(R"("param":"input[0].content[0].type","code":"union_tag_invalid")"),
            std::string::npos);
  EXPECT_NE(openai_error(questions_with(R"([{"role":"user","content":[{"type":"output_text","text":"x"}]}])"))
                .find(R"("param":"input[0].content[0].type","code":"union_tag_invalid")"),
            std::string::npos);
  EXPECT_NE(openai_error(questions_with(R"([{"role":"user","phase":"commentary","content":"x"}])"))
                .find(R"("param":"input[0].phase","code":"extra_forbidden")"),
            std::string::npos);
  EXPECT_NE(openai_error(questions_with(R"([{"role":"assistant","phase":"later","content":"x"}])"))
                .find(R"("param":"input[0].phase","code":"literal_error")"),
            std::string::npos);
  EXPECT_NE(openai_error(questions_with(R"([{"role":"user","content":[{"type":"input_json","data":"text"}]}])"))
                .find(R"("param":"input[0].content[0].data","code":"value_type")"),
            std::string::npos);
  EXPECT_NE(openai_error(questions_with(R"([{"role":"user","content":[{"type":"input_text","text":"x","prompt_cache_breakpoint":{"mode":"implicit"}}]}])"))
                .find(R"("param":"input[0].content[0].prompt_cache_breakpoint.mode","code":"literal_error")"),
            std::string::npos);
}

TEST(DecisionsRequest, AllowsFourHundredQuestionsByDefault) {
  std::string questions;
  for (int i = 0; i < 401; ++i) questions += std::string(i ? "," : "") + R"({"type":"predicate","instructions":"q"})";
  EXPECT_EQ(parse_decisions_request(R"({"input":"x","questions":[)" + questions + "]}", RequestLimits{.has_default_model = true})
                .error()
                .issues.front()
                .type,
            "too_long");
  questions.resize(questions.rfind(",{"));
  EXPECT_TRUE(parse_decisions_request(R"({"input":"x","questions":[)" + questions + "]}", RequestLimits{.has_default_model = true}).ok());
}

TEST(DecisionsRequest, ErrorsUseTheOpenAIEnvelopeWithParams) {
  EXPECT_EQ(openai_error(R"({"input":"x","questions":[{"type":"choice","instructions":"","choices":[{"value":"a"}]}]})"),
            R"({"error":{"message":"List should have at least 2 items after validation","type":"invalid_request_error","param":"questions[0].choices","code":"too_short"}})");
  EXPECT_NE(openai_error(R"({"input":"x","questions":[{"type":"choice","instructions":"","choices":[{"value":"a"},{"value":"a"}]}]})")
                .find(R"("param":"questions[0].choices[1].value","code":"duplicate")"),
            std::string::npos);
  EXPECT_NE(openai_error(R"({"input":"x","questions":[{"type":"choice","instructions":"","choices":[{"value":"true"},{"value":true}]}]})")
                .find(R"("param":"questions[0].choices[1].value","code":"duplicate")"),
            std::string::npos);
  EXPECT_NE(openai_error(R"({"input":"x","questions":[{"type":"predicate","name":"x","instructions":""},{"type":"predicate","name":"x","instructions":""}]})")
                .find(R"("param":"questions[1].name","code":"duplicate")"),
            std::string::npos);
  EXPECT_NE(openai_error(R"({"input":"x","questions":[{"type":"refusal","instructions":""}]})")
                .find(R"("param":"questions[0].type","code":"union_tag_invalid")"),
            std::string::npos);
  EXPECT_NE(openai_error(R"({"input":[{"role":"tool","content":"x"}],"questions":[{"type":"predicate","instructions":""}]})")
                .find(R"("param":"input[0].role","code":"literal_error")"),
            std::string::npos);
  EXPECT_NE(openai_error(R"({"input":[{"role":"user","content":[{"type":"input_text","text":"A"},{"type":"input_image","image_url":"http://x/a.png"}]}],"questions":[{"type":"predicate","instructions":""}]})")
                .find(R"("param":"input[0].content[1]","code":"unsupported_media")"),
            std::string::npos);
  EXPECT_NE(openai_error(R"({"input":"x","questions":[{"type":"score","instructions":"","levels":[{"label":"0"},{"label":"1"},{"label":"2"},{"label":"3"},{"label":"4"},{"label":"5"},{"label":"6"},{"label":"7"},{"label":"8"},{"label":"9"},{"label":"10"}]}]})")
                .find(R"("param":"questions[0].levels","code":"too_long")"),
            std::string::npos);
  EXPECT_NE(openai_error("{").find(R"("param":null,"code":"json_invalid")"), std::string::npos);
}

TEST(DecisionsResponse, SerialisesTheExampleExactly) {
  auto request = parse(example);
  ASSERT_TRUE(request.ok());
  DecisionResult result;
  result.model = "mock-ramp";
  result.input_tokens = 412;
  result.answers = {Answer{QuestionType::choice, {0.7310585786300049, 0.2689414213699951}, 0, 0.4621171572600098},
                    Answer{QuestionType::noul, {0.7310585786300049, 0.2689414213699951}},
                    Answer{QuestionType::score, {0.6652409557748218, 0.24472847105479764, 0.09003057317038046}, 0,
                           0.3628155739066622, 0.42478961739555854}};
  EXPECT_EQ(serialize_decisions_response(request.value(), result),
            R"({"model":"mock-ramp","answers":[)"
            R"({"type":"choice","name":"category","choice":"billing","probabilities":[{"value":"billing","probability":0.7310585786300049},{"value":"technical","probability":0.2689414213699951}],"confidence":0.4621171572600098},)"
            R"({"type":"predicate","name":"dup","probability":0.7310585786300049},)"
            R"({"type":"score","name":null,"score":0.42478961739555854,"probabilities":[{"value":0,"label":"calm","probability":0.6652409557748218},{"value":1,"label":"annoyed","probability":0.24472847105479764},{"value":2,"label":"furious","probability":0.09003057317038046}],"confidence":0.3628155739066622}],)"
            R"("usage":{"input_tokens":412,"input_tokens_details":{"cached_tokens":0,"cache_write_tokens":0},"output_tokens":0,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":412}})");
}

TEST(DecisionsResponse, BooleanChoicesStayBooleans) {
  auto request = parse(R"({"input":"x","questions":[{"type":"choice","instructions":"","choices":[{"value":true},{"value":false}]}]})");
  ASSERT_TRUE(request.ok());
  DecisionResult result;
  result.model = "m";
  result.input_tokens = 1;
  result.answers = {Answer{QuestionType::choice, {0.75, 0.25}, 0, 0.5}};
  EXPECT_NE(serialize_decisions_response(request.value(), result).find(R"("name":null,"choice":true,)"), std::string::npos);
}

}  // namespace
}  // namespace s1::api
