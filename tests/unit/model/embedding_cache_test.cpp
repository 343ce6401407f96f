// The embedding-similarity contract's candidate cache: bounded, least recently used out first,
// keyed by exact text.

#include "decide/contracts/embedding_similarity.h"
#include "model/checkpoint/load_error.h"

#include <gtest/gtest.h>

namespace s1::decide {
namespace {

std::vector<float> vec(float value) { return {value, value + 1}; }

TEST(EmbeddingCache, FindsExactTextsOnly) {
  EmbeddingCache cache(4);
  cache.insert("billing", vec(1));
  ASSERT_NE(cache.find("billing"), nullptr);
  EXPECT_EQ(*cache.find("billing"), vec(1));
  EXPECT_EQ(cache.find("Billing"), nullptr);
  EXPECT_EQ(cache.find("billing "), nullptr);
  EXPECT_EQ(cache.find(""), nullptr);
}

TEST(EmbeddingCache, EvictsTheLeastRecentlyUsed) {
  EmbeddingCache cache(3);
  cache.insert("a", vec(1));
  cache.insert("b", vec(2));
  cache.insert("c", vec(3));
  ASSERT_NE(cache.find("a"), nullptr);  // a is now the most recently used; b the least
  cache.insert("d", vec(4));
  EXPECT_EQ(cache.size(), 3U);
  EXPECT_EQ(cache.find("b"), nullptr);
  EXPECT_NE(cache.find("a"), nullptr);
  EXPECT_NE(cache.find("c"), nullptr);
  EXPECT_NE(cache.find("d"), nullptr);
}

TEST(EmbeddingCache, ReinsertingReplacesAndRefreshes) {
  EmbeddingCache cache(2);
  cache.insert("a", vec(1));
  cache.insert("b", vec(2));
  cache.insert("a", vec(5));  // refreshes a: b becomes the least recently used
  cache.insert("c", vec(3));
  EXPECT_EQ(cache.size(), 2U);
  ASSERT_NE(cache.find("a"), nullptr);
  EXPECT_EQ(*cache.find("a"), vec(5));
  EXPECT_EQ(cache.find("b"), nullptr);
}

TEST(EmbeddingCache, CapacityZeroCachesNothing) {
  EmbeddingCache cache(0);
  cache.insert("a", vec(1));
  EXPECT_EQ(cache.size(), 0U);
  EXPECT_EQ(cache.find("a"), nullptr);
}

TEST(EmbeddingCache, StaysBoundedUnderManyInserts) {
  EmbeddingCache cache(100);
  for (int i = 0; i < 10000; ++i) cache.insert("text " + std::to_string(i), vec(static_cast<float>(i)));
  EXPECT_EQ(cache.size(), 100U);
  EXPECT_EQ(cache.find("text 9899"), nullptr);
  ASSERT_NE(cache.find("text 9900"), nullptr);
  EXPECT_EQ(*cache.find("text 9999"), vec(9999));
}

TEST(EmbeddingSimilarity, CandidateTextsFollowTheContract) {
  api::Question choice;
  choice.type = api::QuestionType::choice;
  choice.options = {{"billing", nullptr}, {"technical", "bugs"}, {"x", api::Json::parse(R"({"a":[1,2.5,"é"]})")}};
  EXPECT_EQ(candidate_texts(choice), (std::vector<std::string>{"billing", "technical: bugs", "x: {\"a\":[1,2.5,\"é\"]}"}));
  choice.instructions = "Which team?";
  EXPECT_EQ(candidate_texts(choice), (std::vector<std::string>{"Which team? billing", "Which team? technical: bugs",
                                                               "Which team? x: {\"a\":[1,2.5,\"é\"]}"}));
  choice.instructions = "";
  EXPECT_EQ(candidate_texts(choice)[0], "billing");

  api::Question score;
  score.type = api::QuestionType::score;
  score.levels = {"low", api::Json::parse("[1,2]")};
  score.instructions = "How urgent?";
  EXPECT_EQ(candidate_texts(score), (std::vector<std::string>{"This is low.", "This is [1,2]."}));

  api::Question noul;
  noul.type = api::QuestionType::noul;
  EXPECT_EQ(candidate_texts(noul), (std::vector<std::string>{"yes", "not yes"}));
  noul.instructions = "Refund requested";
  EXPECT_EQ(candidate_texts(noul), (std::vector<std::string>{"yes, Refund requested", "no, Refund requested"}));
  noul.noul_false = "no refund";
  EXPECT_EQ(candidate_texts(noul), (std::vector<std::string>{"yes, Refund requested", "no refund"}));
  noul.noul_true = "asks for money back";
  EXPECT_EQ(candidate_texts(noul), (std::vector<std::string>{"asks for money back", "no refund"}));
  noul.noul_false = nullptr;
  EXPECT_EQ(candidate_texts(noul), (std::vector<std::string>{"asks for money back", "not asks for money back"}));
}

TEST(EmbeddingSimilarity, DecisionFileIsStrict) {
  const auto read = [](const char* text) {
    checkpoint::ConfigReader reader(nlohmann::ordered_json::parse(text), "s1serve.json");
    (void)reader.required<std::string>("contract");
    return read_embedding_similarity_settings(reader);
  };
  const auto settings = read(R"({"contract": "embedding-similarity", "name": "minilm", "aliases": ["all-minilm-l6-v2"],
                                 "similarity_scale": 20.0, "description": "d", "dtype": "bf16",
                                 "candidate_cache_entries": 16})");
  EXPECT_EQ(settings.name, "minilm");
  EXPECT_EQ(settings.aliases, std::vector<std::string>{"all-minilm-l6-v2"});
  EXPECT_EQ(settings.precision, backend::cpu::Precision::bf16);
  EXPECT_EQ(settings.candidate_cache_entries, 16U);
  EXPECT_EQ(read(R"({"contract": "embedding-similarity", "name": "m"})").precision, backend::cpu::Precision::fp32);
  EXPECT_THROW(read(R"({"contract": "embedding-similarity", "name": "m", "temperature": 2})"), checkpoint::LoadError);
  EXPECT_THROW(read(R"({"contract": "embedding-similarity", "name": "m", "dtype": "fp16"})"), checkpoint::LoadError);
  EXPECT_THROW(read(R"({"contract": "embedding-similarity", "name": "m", "similarity_scale": 0})"),
               checkpoint::LoadError);
  EXPECT_THROW(read(R"({"contract": "embedding-similarity"})"), checkpoint::LoadError);
}

}  // namespace
}  // namespace s1::decide
