// Qwen and LFM2 chat templates rendered by the Jinja interpreter vs Transformers' apply_chat_template on the same
// template text (tests/parity/text/chat_*.jsonl, tools/reference/make_chat_template_fixtures.py): the
// text byte for byte, the template's own errors, and the ids the family's tiny tokenizer gives it.

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "source_files.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace s1::text {
namespace {

using test::read_file;
using test::source_dir;

std::vector<nlohmann::json> read_json_lines(const std::filesystem::path& path) {
  std::ifstream file(path);
  if (!file) throw std::runtime_error("cannot open " + path.string());
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(file, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

void expect_matches_fixture(const ChatTemplate& chat_template, const std::filesystem::path& tokenizer_dir,
                            const std::string& fixture) {
  const Tokenizer tokenizer = Tokenizer::from_file(tokenizer_dir / "tokenizer.json");
  const std::vector<nlohmann::json> records = read_json_lines(source_dir() / "tests/parity/text" / fixture);
  ASSERT_GT(records.size(), 40u);
  size_t rendered = 0;
  size_t rejected = 0;
  for (size_t index = 1; index < records.size(); ++index) {
    const nlohmann::json& record = records[index];
    std::vector<ChatMessage> messages;
    for (const nlohmann::json& message : record["messages"]) {
      messages.push_back({message["role"].get<std::string>(), message["content"].get<std::string>()});
    }
    const bool add_generation_prompt = record["add_generation_prompt"].get<bool>();
    const Thinking thinking =
        record["thinking"].get<std::string>() == "enabled" ? Thinking::enabled : Thinking::disabled;
    const std::string where = fixture + " record " + std::to_string(index) + " " + record["messages"].dump();
    if (record.contains("error")) {
      try {
        chat_template.render(messages, add_generation_prompt, thinking);
        ADD_FAILURE() << where << ": expected the error " << record["error"];
      } catch (const std::invalid_argument& error) {
        EXPECT_EQ(std::string(error.what()), record["error"].get<std::string>()) << where;
      }
      ++rejected;
      continue;
    }
    const std::string text = chat_template.render(messages, add_generation_prompt, thinking);
    EXPECT_EQ(text, record["text"].get<std::string>()) << where;
    EXPECT_EQ(tokenizer.encode(text).ids, record["ids"].get<std::vector<int32_t>>()) << where;
    ++rendered;
  }
  EXPECT_GT(rendered, 40u);
  if (fixture == "chat_qwen3_5.jsonl") {
    EXPECT_GT(rejected, 0u);
  }
}

TEST(ChatTemplateParity, Qwen3FromTheTinyTokenizerDirectory) {
  const std::filesystem::path dir = source_dir() / "tests/fixtures/qwen-tiny-tokenizer";
  const ChatTemplate chat_template = ChatTemplate::from_model_dir(dir);
  expect_matches_fixture(chat_template, dir, "chat_qwen3.jsonl");
}

TEST(ChatTemplateParity, Qwen3_5FromTheTinyQwen3_5TokenizerDirectory) {
  const std::filesystem::path dir = source_dir() / "tests/fixtures/qwen-tiny-tokenizer/qwen3_5";
  const ChatTemplate chat_template = ChatTemplate::from_model_dir(dir);
  expect_matches_fixture(chat_template, dir, "chat_qwen3_5.jsonl");
}

TEST(ChatTemplateParity, Qwen3_5FromTheTemplateFile) {
  const std::filesystem::path path = source_dir() / "tests/parity/text/chat_templates/qwen3_5.jinja";
  const ChatTemplate chat_template = ChatTemplate::from_template_text(read_file(path), path.string());
  expect_matches_fixture(chat_template, source_dir() / "tests/fixtures/qwen-tiny-tokenizer/qwen3_5",
                         "chat_qwen3_5.jsonl");
}

TEST(ChatTemplateParity, Lfm2FromTheTinyLfm2Directory) {
  // The template and its bos_token (<|startoftext|>) both come from tokenizer_config.json.
  const std::filesystem::path dir = source_dir() / "tests/fixtures/tiny-lfm2";
  const ChatTemplate chat_template = ChatTemplate::from_model_dir(dir);
  expect_matches_fixture(chat_template, dir, "chat_lfm2.jsonl");
}

TEST(ChatTemplateParity, Lfm2FromTheTemplateFile) {
  const std::filesystem::path path = source_dir() / "tests/parity/text/chat_templates/lfm2.jinja";
  const ChatTemplate chat_template =
      ChatTemplate::from_template_text(read_file(path), path.string(), "<|startoftext|>");
  expect_matches_fixture(chat_template, source_dir() / "tests/fixtures/tiny-lfm2", "chat_lfm2.jsonl");
}

}  // namespace
}  // namespace s1::text
