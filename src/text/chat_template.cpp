#include "text/chat_template.h"

#include <cstdint>
#include <fstream>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "text/utf8.h"

namespace s1::text {
namespace {

struct KnownTemplate {
  uint64_t fingerprint;
  std::string_view name;
  std::string_view description;
};

// FNV-1a 64 of the normalised text of each template as published with the models (copies in
// tests/parity/text/chat_templates/).
constexpr KnownTemplate kKnownTemplates[] = {
    {0x2bfdb7aa9754484eULL, "qwen3", "Qwen3 (hybrid thinking, <think> blocks)"},
    {0xf5fadd094edeabe9ULL, "qwen3_5", "Qwen3.5"},
    {0x6ebe17e9a93f4638ULL, "lfm2", "LFM2.5"},
};

std::string normalised(std::string_view text) {
  std::string result;
  result.reserve(text.size());
  for (size_t at = 0; at < text.size(); ++at) {
    if (text[at] == '\r' && at + 1 < text.size() && text[at + 1] == '\n') continue;
    result.push_back(text[at]);
  }
  const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  size_t begin = 0;
  size_t end = result.size();
  while (begin < end && is_space(result[begin])) ++begin;
  while (end > begin && is_space(result[end - 1])) --end;
  return result.substr(begin, end - begin);
}

uint64_t fingerprint(std::string_view text) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw TokenizerLoadError("cannot open " + path.string());
  std::ostringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

// Python's str.isspace(), which Jinja's trim filter (str.strip()) uses.
bool is_python_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

std::string python_trim(std::string_view text) {
  size_t begin = 0;
  while (begin < text.size()) {
    const DecodedChar decoded = decode_utf8(text, begin);
    if (!is_python_space(decoded.code_point)) break;
    begin += decoded.length;
  }
  size_t end = begin;
  for (size_t position = begin; position < text.size();) {
    const DecodedChar decoded = decode_utf8(text, position);
    position += decoded.length;
    if (!is_python_space(decoded.code_point)) end = position;
  }
  return std::string(text.substr(begin, end - begin));
}

std::string_view lstrip_newlines(std::string_view text) {
  while (!text.empty() && text.front() == '\n') text.remove_prefix(1);
  return text;
}

std::string_view rstrip_newlines(std::string_view text) {
  while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  return text;
}

// Python's s.split(separator)[0] and [-1].
std::string_view before_first(std::string_view text, std::string_view separator) {
  return text.substr(0, text.find(separator));
}
std::string_view after_last(std::string_view text, std::string_view separator) {
  const size_t at = text.rfind(separator);
  return at == std::string_view::npos ? text : text.substr(at + separator.size());
}

bool is_tool_response(std::string_view content) {
  return content.starts_with("<tool_response>") && content.ends_with("</tool_response>");
}

// The assistant content split into (reasoning, answer) the way both templates do when it holds
// "</think>": reasoning is between the last <think> and the first </think>.
struct SplitReply {
  std::string reasoning;
  std::string answer;
};
SplitReply split_reply(std::string_view content) {
  if (content.find("</think>") == std::string_view::npos) return {"", std::string(content)};
  return {std::string(lstrip_newlines(after_last(rstrip_newlines(before_first(content, "</think>")), "<think>"))),
          std::string(lstrip_newlines(after_last(content, "</think>")))};
}

void check_roles(std::span<const ChatMessage> messages) {
  if (messages.empty()) throw std::invalid_argument("chat template: no messages");
  for (const ChatMessage& message : messages) {
    if (message.role != "system" && message.role != "user" && message.role != "assistant") {
      throw std::invalid_argument("chat template: role '" + message.role +
                                  "' is not supported (system, user, assistant)");
    }
  }
}

// Index of the last user message that is not a tool response (the templates' last_query_index).
std::optional<size_t> last_query_index(std::span<const ChatMessage> messages, bool trim_content) {
  for (size_t index = messages.size(); index-- > 0;) {
    if (messages[index].role != "user") continue;
    const std::string content = trim_content ? python_trim(messages[index].content) : messages[index].content;
    if (!is_tool_response(content)) return index;
  }
  return std::nullopt;
}

// A special token as tokenizer_config.json writes it: a string, or an object whose "content" is the
// string (older AddedToken form); absent or null gives "".
std::string special_token_text(const nlohmann::json& config, const std::string& key, const std::filesystem::path& file) {
  const auto found = config.find(key);
  if (found == config.end() || found->is_null()) return {};
  if (found->is_string()) return found->get<std::string>();
  if (found->is_object() && found->contains("content") && (*found)["content"].is_string()) {
    return (*found)["content"].get<std::string>();
  }
  throw TokenizerLoadError(file.string() + ": \"" + key + "\" is neither a string nor an object with a string \"content\"");
}

}  // namespace

ChatTemplate ChatTemplate::from_template_text(std::string_view jinja, std::string_view source_name,
                                              std::string bos_token) {
  const uint64_t hash = fingerprint(normalised(jinja));
  for (const KnownTemplate& known : kKnownTemplates) {
    if (known.fingerprint != hash) continue;
    const Kind kind = known.name == "qwen3" ? Kind::qwen3 : known.name == "qwen3_5" ? Kind::qwen3_5 : Kind::lfm2;
    return ChatTemplate(kind, std::move(bos_token));
  }
  std::string supported;
  for (const KnownTemplate& known : kKnownTemplates) {
    supported += (supported.empty() ? "" : ", ") + std::string(known.name) + " (" + std::string(known.description) + ")";
  }
  std::ostringstream message;
  message << "chat template in " << source_name << " is not a supported template (fingerprint " << std::hex << hash
          << "); supported: " << supported;
  throw TokenizerLoadError(message.str());
}

ChatTemplate ChatTemplate::from_model_dir(const std::filesystem::path& dir) {
  const std::filesystem::path config_path = dir / "tokenizer_config.json";
  nlohmann::json config = nlohmann::json::object();
  if (std::filesystem::exists(config_path)) {
    try {
      config = nlohmann::json::parse(read_file(config_path));
    } catch (const nlohmann::json::exception& error) {
      throw TokenizerLoadError(config_path.string() + ": invalid JSON: " + error.what());
    }
  }
  const std::string bos_token = special_token_text(config, "bos_token", config_path);
  const std::filesystem::path jinja = dir / "chat_template.jinja";
  if (std::filesystem::exists(jinja)) return from_template_text(read_file(jinja), jinja.string(), bos_token);
  if (!std::filesystem::exists(config_path)) {
    throw TokenizerLoadError("no chat template in " + dir.string() + ": neither chat_template.jinja nor tokenizer_config.json");
  }
  const auto found = config.find("chat_template");
  if (found == config.end() || found->is_null()) {
    throw TokenizerLoadError(config_path.string() + " has no \"chat_template\" (and there is no chat_template.jinja)");
  }
  if (found->is_string()) return from_template_text(found->get<std::string>(), config_path.string(), bos_token);
  // The older list form: [{"name": ..., "template": ...}], of which "default" is the chat template.
  if (found->is_array()) {
    for (const nlohmann::json& entry : *found) {
      if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template") &&
          entry["template"].is_string()) {
        return from_template_text(entry["template"].get<std::string>(), config_path.string(), bos_token);
      }
    }
  }
  throw TokenizerLoadError(config_path.string() + ": \"chat_template\" is neither a string nor a list with a \"default\" entry");
}

std::string_view ChatTemplate::name() const {
  switch (kind_) {
    case Kind::qwen3:
      return "qwen3";
    case Kind::qwen3_5:
      return "qwen3_5";
    case Kind::lfm2:
      return "lfm2";
  }
  return "";
}

std::string ChatTemplate::render(std::span<const ChatMessage> messages, bool add_generation_prompt,
                                 Thinking thinking) const {
  check_roles(messages);
  switch (kind_) {
    case Kind::qwen3:
      return render_qwen3(messages, add_generation_prompt, thinking);
    case Kind::qwen3_5:
      return render_qwen3_5(messages, add_generation_prompt, thinking);
    case Kind::lfm2:
      return render_lfm2(messages, add_generation_prompt);
  }
  return {};
}

std::string ChatTemplate::render_qwen3(std::span<const ChatMessage> messages, bool add_generation_prompt,
                                       Thinking thinking) const {
  std::string out;
  if (messages.front().role == "system") out += "<|im_start|>system\n" + messages.front().content + "<|im_end|>\n";
  // Without a user query the template's default is the last index, which no reply comes after.
  const size_t last_query = last_query_index(messages, false).value_or(messages.size() - 1);
  for (size_t index = 0; index < messages.size(); ++index) {
    const ChatMessage& message = messages[index];
    if (message.role == "user" || (message.role == "system" && index > 0)) {
      out += "<|im_start|>" + message.role + "\n" + message.content + "<|im_end|>\n";
      continue;
    }
    if (message.role != "assistant") continue;
    const SplitReply reply = split_reply(message.content);
    const bool last = index + 1 == messages.size();
    if (index > last_query && (last || !reply.reasoning.empty())) {
      out += "<|im_start|>assistant\n<think>\n" + std::string(lstrip_newlines(rstrip_newlines(reply.reasoning))) +
             "\n</think>\n\n" + std::string(lstrip_newlines(reply.answer));
    } else {
      out += "<|im_start|>assistant\n" + reply.answer;
    }
    out += "<|im_end|>\n";
  }
  if (add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    if (thinking == Thinking::disabled) out += "<think>\n\n</think>\n\n";
  }
  return out;
}

std::string ChatTemplate::render_qwen3_5(std::span<const ChatMessage> messages, bool add_generation_prompt,
                                         Thinking thinking) const {
  std::string out;
  if (messages.front().role == "system") {
    out += "<|im_start|>system\n" + python_trim(messages.front().content) + "<|im_end|>\n";
  }
  const std::optional<size_t> last_query = last_query_index(messages, true);
  if (!last_query) throw std::invalid_argument("No user query found in messages.");
  for (size_t index = 0; index < messages.size(); ++index) {
    const ChatMessage& message = messages[index];
    const std::string content = python_trim(message.content);
    if (message.role == "system") {
      if (index > 0) throw std::invalid_argument("System message must be at the beginning.");
    } else if (message.role == "user") {
      out += "<|im_start|>user\n" + content + "<|im_end|>\n";
    } else {
      const SplitReply reply = split_reply(content);
      const std::string reasoning = python_trim(reply.reasoning);
      if (index > *last_query && !reasoning.empty()) {
        out += "<|im_start|>assistant\n<think>\n" + reasoning + "\n</think>\n\n" + reply.answer;
      } else {
        out += "<|im_start|>assistant\n" + reply.answer;
      }
      out += "<|im_end|>\n";
    }
  }
  if (add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    out += thinking == Thinking::disabled ? "<think>\n\n</think>\n\n" : "<think>\n";
  }
  return out;
}

// The LFM2.5 template for plain string messages: the bos token, a system block only for a non-empty
// leading system message, then every other message as <|im_start|>role\n…<|im_end|>\n; assistant
// replies before the last one keep only what follows their last </think>, trimmed
// (keep_past_thinking defaults to false). enable_thinking does not exist in this template.
std::string ChatTemplate::render_lfm2(std::span<const ChatMessage> messages, bool add_generation_prompt) const {
  std::string out = bos_token_;
  std::span<const ChatMessage> rest = messages;
  if (messages.front().role == "system") {
    if (!messages.front().content.empty()) out += "<|im_start|>system\n" + messages.front().content + "<|im_end|>\n";
    rest = messages.subspan(1);
  }
  std::optional<size_t> last_assistant;
  for (size_t index = 0; index < rest.size(); ++index) {
    if (rest[index].role == "assistant") last_assistant = index;
  }
  for (size_t index = 0; index < rest.size(); ++index) {
    const ChatMessage& message = rest[index];
    out += "<|im_start|>" + message.role + "\n";
    if (message.role == "assistant" && index != last_assistant && message.content.find("</think>") != std::string::npos) {
      out += python_trim(after_last(message.content, "</think>"));
    } else {
      out += message.content;
    }
    out += "<|im_end|>\n";
  }
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

}  // namespace s1::text
