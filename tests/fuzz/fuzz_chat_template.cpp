// libFuzzer target: arbitrary bytes as a Jinja chat template. Parsing must succeed or throw
// SyntaxError; a parsed template is rendered with a conversation of every role, tools and the
// usual flags, and must render or throw RenderError — never crash, hang or leak (the interpreter's
// step, depth and size bounds keep each render short).

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "text/jinja_template.h"

namespace {

const s1::text::jinja::Dict& variables() {
  static const s1::text::jinja::Value value = s1::text::jinja::Value::from_json(nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "What is the weather?"}, {"type": "image"}]},
      {"role": "assistant", "content": "<think>\ncheck\n</think>\n\nLet me look.", "reasoning_content": "check",
       "tool_calls": [{"type": "function", "function": {"name": "weather", "arguments": {"city": "Paris", "days": [1, 2.5]}}}]},
      {"role": "tool", "content": "{\"temperature\": 21}"},
      {"role": "assistant", "content": null}
    ],
    "tools": [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}],
    "documents": null, "add_generation_prompt": true, "enable_thinking": false,
    "bos_token": "<s>", "eos_token": "</s>"
  })"));
  return value.dict();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  try {
    const s1::text::jinja::Template parsed = s1::text::jinja::Template::parse(source);
    try {
      parsed.render(variables());
    } catch (const s1::text::jinja::RenderError&) {
    }
  } catch (const s1::text::jinja::SyntaxError&) {
  }
  return 0;
}
