#pragma once
// A model's chat template, rendered by our Jinja interpreter (jinja_template.h) as Transformers'
// apply_chat_template renders it: the template is parsed when the model loads (a construct the
// interpreter does not support is a load error naming it) and rendered with messages, tools=None,
// documents=None, add_generation_prompt, enable_thinking and the tokenizer's bos_token and
// eos_token as its variables.

#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include "text/jinja_template.h"
#include "text/tokenizer.h"

namespace s1::text {

struct ChatMessage {
  std::string role;  // system, user, assistant, tool, or whatever else the template accepts
  std::string content;
};

enum class Thinking { enabled, disabled };

class ChatTemplate {
 public:
  // The template of a model directory: chat_template.jinja if present (it takes priority in
  // Transformers), else tokenizer_config.json's "chat_template"; bos_token and eos_token from
  // tokenizer_config.json.
  static ChatTemplate from_model_dir(const std::filesystem::path& dir);
  // source_name labels error messages; bos_token and eos_token are what {{ bos_token }} and
  // {{ eos_token }} write (empty leaves them undefined, as Transformers does for a tokenizer
  // without one).
  static ChatTemplate from_template_text(std::string_view jinja, std::string_view source_name,
                                         std::string bos_token = {}, std::string eos_token = {});

  // Where the template came from (a file name), for messages.
  std::string_view name() const { return source_name_; }
  // Throws std::invalid_argument (jinja::RenderError) for what the template rejects (its
  // raise_exception cases) or cannot render.
  std::string render(std::span<const ChatMessage> messages, bool add_generation_prompt, Thinking thinking) const;
  // The template with exactly these variables besides bos_token and eos_token.
  std::string render(const jinja::Dict& variables) const;

 private:
  ChatTemplate(jinja::Template parsed, std::string source_name, std::string bos_token, std::string eos_token)
      : template_(std::move(parsed)),
        source_name_(std::move(source_name)),
        bos_token_(std::move(bos_token)),
        eos_token_(std::move(eos_token)) {}

  jinja::Template template_;
  std::string source_name_;
  std::string bos_token_;
  std::string eos_token_;
};

}  // namespace s1::text
