// Model sources that are directories: s1serve.json picks the contract; anything else is a
// ModelLoadError naming the source and the problem.

#include "decide/contract_table.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace s1::decide {
namespace {

std::string load_error(const std::string& source) {
  try {
    (void)load_model(source);
  } catch (const ModelLoadError& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected a ModelLoadError for " << source;
  return "";
}

class ModelDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("s1-contract-table-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(ModelDir, WithoutADecisionFileIsALoadError) {
  const std::string message = load_error(dir_.string());
  EXPECT_NE(message.find(dir_.string()), std::string::npos) << message;
  EXPECT_NE(message.find("s1serve.json"), std::string::npos) << message;
}

TEST_F(ModelDir, AnUnknownContractIsALoadError) {
  std::ofstream(dir_ / "s1serve.json") << R"({"contract": "telepathy", "name": "x"})";
  const std::string message = load_error(dir_.string());
  EXPECT_NE(message.find("telepathy"), std::string::npos) << message;
  EXPECT_NE(message.find("contract"), std::string::npos) << message;
}

TEST_F(ModelDir, AMissingCheckpointIsALoadError) {
  std::ofstream(dir_ / "s1serve.json") << R"({"contract": "embedding-similarity", "name": "x"})";
  const std::string message = load_error(dir_.string());
  EXPECT_NE(message.find(dir_.string()), std::string::npos) << message;
  EXPECT_NE(message.find("config.json"), std::string::npos) << message;
}

TEST_F(ModelDir, TheDefaultModelNameTellsHowToInstallIt) {
  const char* previous = std::getenv("S1SERVE_MODELS");
  const std::string saved = previous != nullptr ? previous : "";
  ::setenv("S1SERVE_MODELS", dir_.c_str(), 1);
  const std::string message = load_error("minilm");
  if (previous != nullptr) {
    ::setenv("S1SERVE_MODELS", saved.c_str(), 1);
  } else {
    ::unsetenv("S1SERVE_MODELS");
  }
  EXPECT_NE(message.find("scripts/fetch-default-model"), std::string::npos) << message;
  EXPECT_NE(message.find(dir_.string()), std::string::npos) << message;
}

TEST(ContractTable, AnUnknownNameIsALoadError) {
  const std::string message = load_error("no-such-model-anywhere");
  EXPECT_NE(message.find("no-such-model-anywhere"), std::string::npos) << message;
}

}  // namespace
}  // namespace s1::decide
