#include "server/status_routes.h"

#include <gtest/gtest.h>

#include "api/json.h"
#include "decide/contract_table.h"

namespace s1::server {
namespace {

registry::ServedModel mock(const std::string& source, std::vector<std::string> aliases, std::string release_date) {
  decide::LoadedModel loaded = decide::load_model(source);
  return registry::ServedModel{
      loaded.name, std::move(aliases), std::move(release_date),
      std::make_unique<runtime::ModelRunner>(loaded.name, std::move(loaded.engine), runtime::RunnerOptions{4, {}}),
      nullptr, nullptr};
}

class ModelListingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    registry_.add(mock("mock:ramp", {"ramp-latest"}, "2026-09-15"));
    registry_.add(mock("mock:letters", {}, "2026-12-01"));
    registry_.set_default_model("mock-ramp", {"jev-latest"});
    config_.max_questions = 400;
    config_.max_body_bytes = 1000;
    config_.owned_by = "acme";
  }
  api::Json listing() { return api::Json::parse(models_body(registry_, ModelListing{1767225600, config_})); }

  registry::ModelRegistry registry_;
  registry::ServerConfig config_;
};

TEST_F(ModelListingTest, OpenAiDataHasOneEntryPerCanonicalId) {
  const api::Json body = listing();
  ASSERT_EQ(body["data"].size(), 2u);
  EXPECT_EQ(body["data"][0],
            api::Json::parse(R"({"id":"mock-ramp","object":"model","created":1767225600,"owned_by":"acme"})"));
  EXPECT_EQ(body["data"][1]["id"], "mock-letters");
}

TEST_F(ModelListingTest, TypeSafeModelsHaveOneEntryPerCanonicalNameAndAlias) {
  const api::Json models = listing()["models"];
  ASSERT_EQ(models.size(), 4u);
  EXPECT_EQ(models[0]["name"], "mock-ramp");
  EXPECT_FALSE(models[0].contains("alias_of"));
  EXPECT_EQ(models[0]["aliases"], api::Json::parse(R"(["ramp-latest","jev-latest"])"));
  for (const int alias : {1, 2}) {
    EXPECT_EQ(models[alias]["alias_of"], "mock-ramp");
    EXPECT_FALSE(models[alias].contains("aliases"));
    for (const char* member : {"description", "release_date", "backend", "question_types", "max_choice_options",
                               "context_tokens", "confidence_method", "test_backend", "max_questions"}) {
      EXPECT_EQ(models[alias][member], models[0][member]) << member;
    }
  }
  EXPECT_EQ(models[1]["name"], "ramp-latest");
  EXPECT_EQ(models[2]["name"], "jev-latest");
  EXPECT_EQ(models[3]["name"], "mock-letters");
}

TEST_F(ModelListingTest, EntriesCarryTheReleaseDateTestMarkerAndLimits) {
  const api::Json models = listing()["models"];
  EXPECT_EQ(models[0]["release_date"], "2026-09-15");
  EXPECT_EQ(models[3]["release_date"], "2026-12-01");
  EXPECT_EQ(models[0]["test_backend"], true);
  EXPECT_EQ(models[0]["max_questions"], 400);
  EXPECT_EQ(models[0]["max_body_bytes"], 1000);
  EXPECT_EQ(models[0]["max_images"], 0);
  // A test backend has no checkpoint to name.
  EXPECT_EQ(models[0]["served_by"],
            api::Json::parse(R"({"s1serve":")" S1SERVE_VERSION R"(","checkpoint":null,"dtype":null,"device":"cpu"})"));
}

TEST_F(ModelListingTest, OneModelObjectPerServedName) {
  const ModelListing listing{7, config_};
  EXPECT_EQ(model_body(registry_, "mock-ramp", listing),
            R"({"id":"mock-ramp","object":"model","created":7,"owned_by":"acme"})");
  EXPECT_EQ(model_body(registry_, "jev-latest", listing),
            R"({"id":"jev-latest","object":"model","created":7,"owned_by":"acme"})");
  EXPECT_FALSE(model_body(registry_, "mock-nope", listing));
  EXPECT_FALSE(model_body(registry_, "MOCK-RAMP", listing));
}

}  // namespace
}  // namespace s1::server
