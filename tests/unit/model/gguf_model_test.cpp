// Model sources that are GGUF files: served with the label-token contract when the metadata allows
// it; otherwise a ModelLoadError naming the key.

#include "decide/gguf_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "../checkpoint/gguf_bytes.h"
#include "../checkpoint/source_dir.h"
#include "decide/contract_table.h"

namespace s1::decide {
namespace {

using checkpoint::testing::GgufBytes;
using ::testing::AllOf;
using ::testing::HasSubstr;

class GgufSource : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("s1-gguf-model-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A tensorless GGUF with these string keys.
  std::string write(const std::vector<std::pair<std::string, std::string>>& keys) const {
    GgufBytes bytes;
    bytes.header(0, keys.size());
    for (const auto& [key, value] : keys) bytes.key_string(key, value);
    const std::filesystem::path file = dir_ / "model.gguf";
    std::ofstream(file, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.bytes().data()), static_cast<std::streamsize>(bytes.bytes().size()));
    return file.string();
  }

  static std::string load_error(const std::string& source) {
    try {
      (void)load_model(source);
    } catch (const ModelLoadError& error) {
      return error.what();
    }
    ADD_FAILURE() << "expected a ModelLoadError for " << source;
    return "";
  }

  std::filesystem::path dir_;
};

TEST_F(GgufSource, AnUnsupportedArchitectureNamesTheKey) {
  const std::string file = write({{"general.architecture", "llama"}});
  EXPECT_THAT(load_error(file),
              AllOf(HasSubstr(file), HasSubstr("general.architecture"), HasSubstr("'llama'"), HasSubstr("qwen35")));
}

TEST_F(GgufSource, AMissingArchitectureNamesTheKey) {
  const std::string file = write({{"tokenizer.chat_template", "{{ messages }}"}});
  EXPECT_THAT(load_error(file), AllOf(HasSubstr("general.architecture"), HasSubstr("missing")));
}

TEST_F(GgufSource, ADecisionTypeNotImplementedNamesIt) {
  const std::string file =
      write({{"general.architecture", "qwen3"}, {"qwen3.decision.type", "kev"}, {"tokenizer.chat_template", "x"}});
  EXPECT_THAT(load_error(file),
              AllOf(HasSubstr("qwen3.decision.type"), HasSubstr("'kev'"), HasSubstr("not implement")));
}

TEST_F(GgufSource, AnUnknownDecisionTypeNamesIt) {
  const std::string file = write({{"general.architecture", "qwen3"}, {"qwen3.decision.type", "sorting-hat"}});
  EXPECT_THAT(load_error(file), AllOf(HasSubstr("qwen3.decision.type"), HasSubstr("'sorting-hat'"),
                                      HasSubstr("not a decision type"), HasSubstr("lfm2-d1")));
}

TEST_F(GgufSource, ADecisionTypeWithoutItsSystemOneTemplateNamesTheKey) {
  const std::string file =
      write({{"general.architecture", "qwen3"}, {"qwen3.decision.type", "lev"}, {"tokenizer.chat_template", "x"}});
  EXPECT_THAT(load_error(file), AllOf(HasSubstr("tokenizer.chat_template.systemone"), HasSubstr("missing")));
}

TEST_F(GgufSource, ADecisionTemperatureMustBeAPositiveNumber) {
  const std::string file = write({{"general.architecture", "qwen3"},
                                  {"qwen3.decision.type", "lev"},
                                  {"qwen3.decision.temperature.choice", "warm"},
                                  {"tokenizer.chat_template.systemone", "x"}});
  EXPECT_THAT(load_error(file), AllOf(HasSubstr("qwen3.decision.temperature.choice"), HasSubstr("above 0")));
}

TEST_F(GgufSource, ADecisionTypeIsServedUnderItsDecisionFileButNotAnotherContract) {
  const std::filesystem::path file = dir_ / "tiny-qwen3-openjev.gguf";
  std::filesystem::copy_file(checkpoint::testing::source_dir() / "tests/fixtures/gguf/decision/tiny-qwen3-openjev.gguf",
                             file);
  const LoadedModel plain = load_model(file.string());
  EXPECT_EQ(plain.name, "tiny-qwen3-openjev");
  // Open-Jev's labels are the 52 letters.
  EXPECT_EQ(plain.engine->info().max_choice_options, 52u);

  std::ofstream(gguf_decision_file(file)) << R"({"contract": "openjev", "name": "renamed", "precision": "fp32"})";
  EXPECT_EQ(load_model(file.string()).name, "renamed");

  std::ofstream(gguf_decision_file(file)) << R"({"contract": "label-token"})";
  EXPECT_THAT(load_error(file.string()),
              AllOf(HasSubstr("tiny-qwen3-openjev.s1serve.json"), HasSubstr("'label-token'"), HasSubstr("openjev")));
}

TEST_F(GgufSource, AMissingChatTemplateNamesTheKey) {
  const std::string file = write({{"general.architecture", "lfm2"}});
  EXPECT_THAT(load_error(file), AllOf(HasSubstr(file), HasSubstr("tokenizer.chat_template"), HasSubstr("missing")));
}

TEST_F(GgufSource, ADecisionFileWithAnotherContractIsALoadError) {
  const std::filesystem::path file = dir_ / "tiny-qwen3.gguf";
  std::filesystem::copy_file(checkpoint::testing::source_dir() / "tests/fixtures/gguf/tiny-qwen3.gguf", file);
  std::ofstream(gguf_decision_file(file)) << R"({"contract": "jemm", "name": "x"})";
  EXPECT_THAT(load_error(file.string()), AllOf(HasSubstr("tiny-qwen3.s1serve.json"), HasSubstr("'jemm'")));
}

TEST_F(GgufSource, TheFixtureIsServedNamedAfterItsFileOrItsDecisionFile) {
  const std::filesystem::path file = dir_ / "tiny-qwen3.gguf";
  std::filesystem::copy_file(checkpoint::testing::source_dir() / "tests/fixtures/gguf/tiny-qwen3.gguf", file);
  const LoadedModel plain = load_model(file.string());
  EXPECT_EQ(plain.name, "tiny-qwen3");
  EXPECT_GE(plain.engine->info().max_choice_options, 26u);

  std::ofstream(gguf_decision_file(file))
      << R"({"contract": "label-token", "name": "renamed", "aliases": ["other"], "precision": "fp32"})";
  const LoadedModel named = load_model(file.string());
  EXPECT_EQ(named.name, "renamed");
  EXPECT_EQ(named.aliases, std::vector<std::string>{"other"});
}

TEST_F(GgufSource, AFileThatIsNotGgufIsALoadError) {
  const std::filesystem::path file = dir_ / "fake.gguf";
  std::ofstream(file) << "not a gguf file at all, but long enough to have a header";
  EXPECT_THAT(load_error(file.string()), HasSubstr(file.string()));
}

}  // namespace
}  // namespace s1::decide
