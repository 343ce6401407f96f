// ChatTemplate loading: where a model directory's template comes from, what an unknown template
// says, and the arguments render rejects. Rendering itself is checked against Transformers in
// tests/parity/text/chat_template_parity_test.cpp.

#include "text/chat_template.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

namespace s1::text {
namespace {

std::filesystem::path source_dir() {
  const char* dir = std::getenv("S1SERVE_SOURCE_DIR");
  if (dir == nullptr) throw std::runtime_error("S1SERVE_SOURCE_DIR is not set");
  return dir;
}

std::string template_text(const std::string& name) {
  std::ifstream file(source_dir() / "tests/parity/text/chat_templates" / (name + ".jinja"), std::ios::binary);
  std::ostringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

// A fresh directory removed at the end of the test.
class ModelDir {
 public:
  ModelDir() : path_(std::filesystem::temp_directory_path() / ("s1_chat_template_" + std::to_string(getpid()) + "_" +
                                                                 std::to_string(counter_++))) {
    std::filesystem::create_directories(path_);
  }
  ~ModelDir() { std::filesystem::remove_all(path_); }
  ModelDir(const ModelDir&) = delete;
  ModelDir& operator=(const ModelDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name, std::ios::binary) << text;
  }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

std::string load_error(const ModelDir& dir) {
  try {
    ChatTemplate::from_model_dir(dir.path());
  } catch (const TokenizerLoadError& error) {
    return error.what();
  }
  return "no error";
}

TEST(ChatTemplate, RecognisesTheQwenTemplatesDespiteSurroundingWhitespaceAndCrlf) {
  EXPECT_EQ(ChatTemplate::from_template_text(template_text("qwen3"), "a").name(), "qwen3");
  EXPECT_EQ(ChatTemplate::from_template_text("\n" + template_text("qwen3_5") + "\n\n", "b").name(), "qwen3_5");
  std::string crlf;
  for (const char c : template_text("qwen3")) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  EXPECT_EQ(ChatTemplate::from_template_text(crlf, "c").name(), "qwen3");
}

TEST(ChatTemplate, UnknownTemplateNamesTheSourceAndTheSupportedOnes) {
  std::string edited = template_text("qwen3");
  edited.replace(edited.find("<|im_start|>"), 12, "<|im_begin|>");
  try {
    ChatTemplate::from_template_text(edited, "model/tokenizer_config.json");
    FAIL() << "expected a load error";
  } catch (const TokenizerLoadError& error) {
    EXPECT_THAT(error.what(), testing::HasSubstr("model/tokenizer_config.json"));
    EXPECT_THAT(error.what(), testing::HasSubstr("qwen3 ("));
    EXPECT_THAT(error.what(), testing::HasSubstr("qwen3_5 ("));
  }
}

TEST(ChatTemplate, JinjaFileTakesPriorityOverTokenizerConfig) {
  ModelDir dir;
  dir.write("tokenizer_config.json", nlohmann::json{{"chat_template", template_text("qwen3")}}.dump());
  EXPECT_EQ(ChatTemplate::from_model_dir(dir.path()).name(), "qwen3");
  dir.write("chat_template.jinja", template_text("qwen3_5"));
  EXPECT_EQ(ChatTemplate::from_model_dir(dir.path()).name(), "qwen3_5");
}

TEST(ChatTemplate, ListFormUsesTheDefaultEntry) {
  ModelDir dir;
  dir.write("tokenizer_config.json",
            nlohmann::json{{"chat_template", nlohmann::json::array({{{"name", "tool_use"}, {"template", "x"}},
                                                                    {{"name", "default"}, {"template", template_text("qwen3")}}})}}
                .dump());
  EXPECT_EQ(ChatTemplate::from_model_dir(dir.path()).name(), "qwen3");
}

TEST(ChatTemplate, MissingTemplatesAreLoadErrors) {
  ModelDir empty;
  EXPECT_THAT(load_error(empty), testing::HasSubstr("neither chat_template.jinja nor tokenizer_config.json"));
  ModelDir no_template;
  no_template.write("tokenizer_config.json", R"({"eos_token": "<|im_end|>"})");
  EXPECT_THAT(load_error(no_template), testing::HasSubstr("has no \"chat_template\""));
  ModelDir broken;
  broken.write("tokenizer_config.json", "{");
  EXPECT_THAT(load_error(broken), testing::HasSubstr("invalid JSON"));
}

TEST(ChatTemplate, RenderRejectsOtherRolesAndNoMessages) {
  for (const std::string name : {"qwen3", "qwen3_5"}) {
    const ChatTemplate chat_template = ChatTemplate::from_template_text(template_text(name), name);
    const std::vector<ChatMessage> tool = {{"user", "q"}, {"tool", "42"}};
    EXPECT_THROW(chat_template.render(tool, true, Thinking::enabled), std::invalid_argument) << name;
    EXPECT_THROW(chat_template.render({}, true, Thinking::enabled), std::invalid_argument) << name;
  }
}

TEST(ChatTemplate, GenerationPromptFollowsThinking) {
  const std::vector<ChatMessage> messages = {{"user", "Hi"}};
  const ChatTemplate qwen3 = ChatTemplate::from_template_text(template_text("qwen3"), "qwen3");
  EXPECT_EQ(qwen3.render(messages, true, Thinking::disabled),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  EXPECT_EQ(qwen3.render(messages, true, Thinking::enabled), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(qwen3.render(messages, false, Thinking::disabled), "<|im_start|>user\nHi<|im_end|>\n");
}

}  // namespace
}  // namespace s1::text
