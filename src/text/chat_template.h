#pragma once
// Chat templates of the Qwen and LFM2 families, rendered natively (no Jinja engine). A model's template is
// recognised by a fingerprint of its text (surrounding whitespace trimmed, CRLF read as LF) and
// rendered byte-exactly as Transformers' apply_chat_template(messages, tokenize=False,
// add_generation_prompt=..., enable_thinking=...) renders that template, for messages with plain
// string content and roles system/user/assistant (no tools, no reasoning_content field).
//
// Supported: "qwen3" (Qwen3's hybrid-thinking template), "qwen3_5" (Qwen3.5's) and "lfm2" (the
// LFM2.5 family's, which starts with the tokenizer's bos_token and has no thinking switch). Any other
// template is a load error naming the file and listing these.

#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include "text/tokenizer.h"

namespace s1::text {

struct ChatMessage {
  std::string role;  // system, user, assistant
  std::string content;
};

enum class Thinking { enabled, disabled };

class ChatTemplate {
 public:
  // The template of a model directory: chat_template.jinja if present (it takes priority in
  // Transformers), else tokenizer_config.json's "chat_template"; bos_token from tokenizer_config.json.
  static ChatTemplate from_model_dir(const std::filesystem::path& dir);
  // source_name only labels error messages; bos_token is what the template's {{ bos_token }} writes
  // (Transformers passes the tokenizer's; empty renders nothing, as an undefined variable does).
  static ChatTemplate from_template_text(std::string_view jinja, std::string_view source_name,
                                         std::string bos_token = {});

  std::string_view name() const;
  // Throws std::invalid_argument for what the template rejects (its raise_exception cases) or
  // does not define here (other roles, no messages).
  std::string render(std::span<const ChatMessage> messages, bool add_generation_prompt, Thinking thinking) const;

 private:
  enum class Kind { qwen3, qwen3_5, lfm2 };
  ChatTemplate(Kind kind, std::string bos_token) : kind_(kind), bos_token_(std::move(bos_token)) {}

  std::string render_qwen3(std::span<const ChatMessage> messages, bool add_generation_prompt, Thinking thinking) const;
  std::string render_qwen3_5(std::span<const ChatMessage> messages, bool add_generation_prompt,
                             Thinking thinking) const;
  std::string render_lfm2(std::span<const ChatMessage> messages, bool add_generation_prompt) const;

  Kind kind_;
  std::string bos_token_;
};

}  // namespace s1::text
