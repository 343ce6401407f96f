#include "text/chat_template.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace s1::text {
namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw TokenizerLoadError("cannot open " + path.string());
  std::ostringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

// A special token as tokenizer_config.json writes it: a string, or an object whose "content" is the
// string (older AddedToken form); absent or null gives "".
std::string special_token_text(const nlohmann::json& config, const std::string& key,
                               const std::filesystem::path& file) {
  const auto found = config.find(key);
  if (found == config.end() || found->is_null()) return {};
  if (found->is_string()) return found->get<std::string>();
  if (found->is_object() && found->contains("content") && (*found)["content"].is_string()) {
    return (*found)["content"].get<std::string>();
  }
  throw TokenizerLoadError(file.string() + ": \"" + key +
                           "\" is neither a string nor an object with a string \"content\"");
}

}  // namespace

ChatTemplate ChatTemplate::from_template_text(std::string_view jinja, std::string_view source_name,
                                              std::string bos_token, std::string eos_token) {
  try {
    return ChatTemplate(jinja::Template::parse(jinja), std::string(source_name), std::move(bos_token),
                        std::move(eos_token));
  } catch (const jinja::SyntaxError& error) {
    throw TokenizerLoadError("chat template in " + std::string(source_name) + ": " + error.what());
  }
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
  const std::string eos_token = special_token_text(config, "eos_token", config_path);
  const std::filesystem::path jinja = dir / "chat_template.jinja";
  if (std::filesystem::exists(jinja)) return from_template_text(read_file(jinja), jinja.string(), bos_token, eos_token);
  if (!std::filesystem::exists(config_path)) {
    throw TokenizerLoadError("no chat template in " + dir.string() +
                             ": neither chat_template.jinja nor tokenizer_config.json");
  }
  const auto found = config.find("chat_template");
  if (found == config.end() || found->is_null()) {
    throw TokenizerLoadError(config_path.string() + " has no \"chat_template\" (and there is no chat_template.jinja)");
  }
  if (found->is_string())
    return from_template_text(found->get<std::string>(), config_path.string(), bos_token, eos_token);
  // The older list form: [{"name": ..., "template": ...}], of which "default" is the chat template.
  if (found->is_array()) {
    for (const nlohmann::json& entry : *found) {
      if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template") &&
          entry["template"].is_string()) {
        return from_template_text(entry["template"].get<std::string>(), config_path.string(), bos_token, eos_token);
      }
    }
  }
  throw TokenizerLoadError(config_path.string() +
                           ": \"chat_template\" is neither a string nor a list with a \"default\" entry");
}

std::string ChatTemplate::render(const jinja::Dict& variables) const {
  jinja::Dict all = variables;
  if (!bos_token_.empty() && all.find("bos_token") == nullptr) all.set("bos_token", jinja::Value(bos_token_));
  if (!eos_token_.empty() && all.find("eos_token") == nullptr) all.set("eos_token", jinja::Value(eos_token_));
  return template_.render(all);
}

std::string ChatTemplate::render(std::span<const ChatMessage> messages, bool add_generation_prompt,
                                 Thinking thinking) const {
  jinja::List list;
  list.reserve(messages.size());
  for (const ChatMessage& message : messages) {
    jinja::Dict entry;
    entry.set("role", jinja::Value(message.role));
    entry.set("content", jinja::Value(message.content));
    list.push_back(jinja::Value(std::move(entry)));
  }
  jinja::Dict variables;
  variables.set("messages", jinja::Value(std::move(list)));
  variables.set("tools", jinja::Value::none());
  variables.set("documents", jinja::Value::none());
  variables.set("add_generation_prompt", jinja::Value(add_generation_prompt));
  variables.set("enable_thinking", jinja::Value(thinking == Thinking::enabled));
  return render(variables);
}

}  // namespace s1::text
