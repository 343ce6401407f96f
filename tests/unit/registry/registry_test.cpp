#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "decide/contract_table.h"
#include "registry/config.h"
#include "registry/model_registry.h"

namespace s1::registry {
namespace {

ServedModel mock(const std::string& source, std::vector<std::string> aliases = {}) {
  decide::LoadedModel loaded = decide::load_model(source);
  return ServedModel{
      loaded.name, std::move(aliases), release_date_or_build(std::nullopt),
      std::make_unique<runtime::ModelRunner>(loaded.name, std::move(loaded.engine), runtime::RunnerOptions{4, {}}),
      nullptr, nullptr};
}

TEST(DefaultModel, TheOnlyServedModelIsTheDefault) {
  ModelRegistry registry;
  registry.add(mock("mock:ramp"));
  registry.set_default_model(std::nullopt);
  EXPECT_EQ(registry.default_model(), "mock-ramp");
}

TEST(DefaultModel, SeveralModelsWithoutOneConfiguredHaveNoDefault) {
  ModelRegistry registry;
  registry.add(mock("mock:ramp"));
  registry.add(mock("mock:uniform"));
  registry.set_default_model(std::nullopt, {"jev-latest"});
  EXPECT_FALSE(registry.default_model());
  EXPECT_EQ(registry.resolve("jev-latest"), nullptr);
}

TEST(DefaultModel, DefaultAliasesNameTheDefaultUnlessTaken) {
  ModelRegistry registry;
  registry.add(mock("mock:ramp", {"ramp-latest"}));
  registry.add(mock("mock:uniform", {"taken"}));
  registry.set_default_model("ramp-latest", {"jev-latest", "taken"});
  EXPECT_EQ(registry.default_model(), "mock-ramp");
  ASSERT_NE(registry.resolve("jev-latest"), nullptr);
  EXPECT_EQ(registry.resolve("jev-latest")->name, "mock-ramp");
  EXPECT_EQ(registry.resolve("taken")->name, "mock-uniform");
  EXPECT_EQ(registry.models().front()->aliases, (std::vector<std::string>{"ramp-latest", "jev-latest"}));
}

TEST(DefaultModel, AServedModelNamedJevLatestKeepsTheName) {
  ModelRegistry registry;
  ServedModel named = mock("mock:uniform");
  named.name = "jev-latest";
  registry.add(std::move(named));
  registry.add(mock("mock:ramp"));
  registry.set_default_model("mock-ramp", {"jev-latest"});
  EXPECT_EQ(registry.resolve("jev-latest")->name, "jev-latest");
  EXPECT_TRUE(registry.models().back()->aliases.empty());
}

TEST(ReleaseDate, ConfiguredElseTheBuilds) {
  EXPECT_EQ(release_date_or_build("2025-01-31"), "2025-01-31");
  EXPECT_TRUE(is_iso_date(release_date_or_build(std::nullopt)));
}

TEST(ReleaseDate, OnlyRealCalendarDates) {
  EXPECT_TRUE(is_iso_date("2024-02-29"));
  EXPECT_FALSE(is_iso_date("2023-02-29"));
  EXPECT_FALSE(is_iso_date("2026-13-01"));
  EXPECT_FALSE(is_iso_date("2026-1-01"));
  EXPECT_FALSE(is_iso_date("2026-01-0a"));
  EXPECT_FALSE(is_iso_date("+026-01-01"));
  EXPECT_FALSE(is_iso_date("2026/01/01"));
}

class ConfigFile : public ::testing::Test {
 protected:
  ServerConfig read(const std::string& text) {
    std::ofstream(path_) << text;
    return read_config_file(path_, ServerConfig{});
  }
  void TearDown() override { std::filesystem::remove(path_); }

 private:
  std::filesystem::path path_ =
      std::filesystem::temp_directory_path() / ("s1serve-config-" + std::to_string(::getpid()) + ".json");
};

TEST_F(ConfigFile, DefaultModelAliasesDefaultToJevLatestAndCanBeTurnedOff) {
  EXPECT_EQ(ServerConfig{}.default_model_aliases, (std::vector<std::string>{"jev-latest"}));
  EXPECT_TRUE(read(R"({"default_model_aliases": []})").default_model_aliases.empty());
  EXPECT_EQ(read(R"({"default_model_aliases": ["a", "b"]})").default_model_aliases,
            (std::vector<std::string>{"a", "b"}));
  EXPECT_THROW(read(R"({"default_model_aliases": "jev-latest"})"), ConfigError);
  EXPECT_THROW(read(R"({"default_model_aliases": [""]})"), ConfigError);
}

TEST_F(ConfigFile, ImageLimits) {
  const ServerConfig defaults = read("{}");
  EXPECT_EQ(defaults.max_images, 8u);
  EXPECT_EQ(defaults.max_image_bytes, 16u * 1024 * 1024);
  EXPECT_EQ(defaults.max_image_pixels, 20'000'000u);
  const ServerConfig config = read(R"({"max_images": 0, "max_image_bytes": 1000, "max_image_pixels": 4096})");
  EXPECT_EQ(config.max_images, 0u);
  EXPECT_EQ(config.max_image_bytes, 1000u);
  EXPECT_EQ(config.max_image_pixels, 4096u);
  EXPECT_THROW(read(R"({"max_images": -1})"), ConfigError);
  EXPECT_THROW(read(R"({"max_image_pixels": 0})"), ConfigError);
  EXPECT_THROW(read(R"({"max_image_bytes": "1"})"), ConfigError);
}

TEST_F(ConfigFile, ModelReleaseDateMustBeADate) {
  const ServerConfig config = read(R"({"models": [{"source": "mock:ramp", "release_date": "2026-09-15"}]})");
  EXPECT_EQ(config.models.at(0).release_date, "2026-09-15");
  EXPECT_THROW(read(R"({"models": [{"source": "mock:ramp", "release_date": "15.09.2026"}]})"), ConfigError);
  EXPECT_THROW(read(R"({"models": [{"source": "mock:ramp", "release_date": null}]})"), ConfigError);
}

TEST_F(ConfigFile, ModelPrefixCacheIsBytes) {
  EXPECT_FALSE(read(R"({"models": [{"source": "mock:ramp"}]})").models.at(0).prefix_cache_bytes);
  EXPECT_EQ(read(R"({"models": [{"source": "mock:ramp", "prefix_cache": 0}]})").models.at(0).prefix_cache_bytes, 0U);
  EXPECT_EQ(read(R"({"models": [{"source": "mock:ramp", "prefix_cache": 1048576}]})").models.at(0).prefix_cache_bytes,
            1048576U);
  EXPECT_THROW(read(R"({"models": [{"source": "mock:ramp", "prefix_cache": -1}]})"), ConfigError);
  EXPECT_THROW(read(R"({"models": [{"source": "mock:ramp", "prefix_cache": "1G"}]})"), ConfigError);
}

}  // namespace
}  // namespace s1::registry
