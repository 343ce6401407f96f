// ChatTemplate loading: where a model directory's template comes from, what an unsupported
// template says, and what render raises. Rendering itself is checked against Transformers and
// jinja2 in tests/parity/text/chat_template_parity_test.cpp and jinja_parity_test.cpp.

#include "text/chat_template.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

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
  ModelDir()
      : path_(std::filesystem::temp_directory_path() /
              ("s1_chat_template_" + std::to_string(getpid()) + "_" + std::to_string(counter_++))) {
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

std::string llama_cpp_template(const std::string& name) {
  std::ifstream file(source_dir() / "tests/parity/text/chat_templates/llama-cpp" / (name + ".jinja"), std::ios::binary);
  std::ostringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

std::string render_one_user_turn(const ChatTemplate& chat_template) {
  const std::vector<ChatMessage> messages = {{"user", "Hi"}};
  return chat_template.render(messages, true, Thinking::disabled);
}

std::string syntax_error(const std::string& text) {
  try {
    ChatTemplate::from_template_text(text, "model/chat_template.jinja");
  } catch (const TokenizerLoadError& error) {
    return error.what();
  }
  return "no error";
}

TEST(ChatTemplate, CrlfAndSurroundingWhitespaceRenderAsJinjaReadsThem) {
  std::string crlf;
  for (const char c : template_text("qwen3")) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  EXPECT_EQ(render_one_user_turn(ChatTemplate::from_template_text(crlf, "crlf")),
            render_one_user_turn(ChatTemplate::from_template_text(template_text("qwen3"), "lf")));
  // One trailing newline is dropped (keep_trailing_newline=False), a second one stays.
  const std::vector<ChatMessage> none;
  EXPECT_EQ(ChatTemplate::from_template_text("x\n", "a").render(none, false, Thinking::enabled), "x");
  EXPECT_EQ(ChatTemplate::from_template_text("x\n\n", "a").render(none, false, Thinking::enabled), "x\n");
}

// llama.cpp's copies of the Qwen3, Qwen3.5-4B and LFM2.5-Instruct templates differ from the ones
// the models publish; the fingerprinting that came before the interpreter refused them at load.
TEST(ChatTemplate, LlamaCppCopiesOfTheTemplatesLoadAndRender) {
  EXPECT_EQ(render_one_user_turn(ChatTemplate::from_template_text(llama_cpp_template("Qwen3.5-4B"), "q")),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  EXPECT_EQ(render_one_user_turn(ChatTemplate::from_template_text(llama_cpp_template("Qwen-Qwen3-0.6B"), "q")),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  EXPECT_EQ(render_one_user_turn(
                ChatTemplate::from_template_text(llama_cpp_template("LFM2.5-Instruct"), "l", "<|startoftext|>")),
            "<|startoftext|><|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>");
}

TEST(ChatTemplate, UnsupportedConstructsAreLoadErrorsNamingThem) {
  EXPECT_THAT(syntax_error("{% include 'other.jinja' %}"),
              testing::HasSubstr("unsupported construct: the 'include' statement"));
  EXPECT_THAT(syntax_error("{% extends 'base' %}"), testing::HasSubstr("the 'extends' statement"));
  EXPECT_THAT(syntax_error("{{ x | frobnicate }}"),
              testing::HasSubstr("unsupported construct: the filter 'frobnicate'"));
  EXPECT_THAT(syntax_error("{% if x is prime %}{% endif %}"), testing::HasSubstr("the test 'prime'"));
  EXPECT_THAT(syntax_error("{% for x in y recursive %}{% endfor %}"), testing::HasSubstr("recursive for loops"));
  EXPECT_THAT(syntax_error("{{ 'a' % x }}{{ f(*args) }}"), testing::HasSubstr("*args"));
  EXPECT_THAT(syntax_error("a\n{% if x %}\nb"),
              testing::HasSubstr("model/chat_template.jinja: line 3: unexpected end of template"));
  EXPECT_THAT(syntax_error("{% break %}"), testing::HasSubstr("'break' outside a loop"));
  EXPECT_THAT(syntax_error("{{ x"), testing::HasSubstr("expected '}}'"));
  EXPECT_THAT(syntax_error("{{ " + std::string(300, '(') + "1" + std::string(300, ')') + " }}"),
              testing::HasSubstr("nest deeper"));
}

TEST(ChatTemplate, BosAndEosTokensComeFromTokenizerConfig) {
  ModelDir dir;
  dir.write(
      "tokenizer_config.json",
      R"({"bos_token": {"content": "<s>"}, "eos_token": "</s>", "chat_template": "{{ bos_token }}|{{ eos_token }}"})");
  EXPECT_EQ(render_one_user_turn(ChatTemplate::from_model_dir(dir.path())), "<s>|</s>");
}

TEST(ChatTemplate, JinjaFileTakesPriorityOverTokenizerConfig) {
  ModelDir dir;
  dir.write("tokenizer_config.json", nlohmann::json{{"chat_template", "from config"}}.dump());
  EXPECT_EQ(render_one_user_turn(ChatTemplate::from_model_dir(dir.path())), "from config");
  dir.write("chat_template.jinja", "from file");
  EXPECT_EQ(render_one_user_turn(ChatTemplate::from_model_dir(dir.path())), "from file");
  EXPECT_THAT(std::string(ChatTemplate::from_model_dir(dir.path()).name()), testing::HasSubstr("chat_template.jinja"));
}

TEST(ChatTemplate, ListFormUsesTheDefaultEntry) {
  ModelDir dir;
  dir.write(
      "tokenizer_config.json",
      nlohmann::json{{"chat_template", nlohmann::json::array({{{"name", "tool_use"}, {"template", "x"}},
                                                              {{"name", "default"}, {"template", "default one"}}})}}
          .dump());
  EXPECT_EQ(render_one_user_turn(ChatTemplate::from_model_dir(dir.path())), "default one");
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

TEST(ChatTemplate, RenderRaisesWhatTheTemplateRaises) {
  const ChatTemplate qwen3_5 = ChatTemplate::from_template_text(template_text("qwen3_5"), "qwen3_5");
  try {
    qwen3_5.render(std::vector<ChatMessage>{{"user", "q"}, {"critic", "x"}}, true, Thinking::enabled);
    FAIL() << "expected the template's error";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "Unexpected message role.");
  }
  EXPECT_THROW(qwen3_5.render({}, true, Thinking::enabled), std::invalid_argument);
  // Qwen3's template reads messages[0].role, undefined for no messages.
  EXPECT_THROW(ChatTemplate::from_template_text(template_text("qwen3"), "qwen3").render({}, true, Thinking::enabled),
               std::invalid_argument);
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
