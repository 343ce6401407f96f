// `s1serve logits --model DIR (--text T | --tokens 1,2,3) [--chat] [--positions last|all] [--top K]
// [--dtype fp32|bf16] [--out FILE.npy]`: what a user needs to check a decoder checkpoint against
// another implementation. Prints one JSON line with the token ids, then one per position with the top
// K logits ([id, logit], float32 in shortest round-trip form); --out writes every logit of the
// chosen positions as a float32 [positions, vocab] .npy array.

#include "cli/logits.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "api/json.h"
#include "cli/npy.h"
#include "decide/contracts/embedding_similarity.h"
#include "model/families.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace s1::cli {
namespace {

struct LogitsFlags {
  std::string model;
  std::string text;
  std::string tokens;
  bool chat = false;
  std::string positions = "last";
  std::size_t top = 5;
  std::string dtype = "fp32";
  std::string out;
};

std::vector<int32_t> parse_token_list(const std::string& list) {
  std::vector<int32_t> ids;
  std::size_t begin = 0;
  while (begin <= list.size()) {
    const std::size_t end = std::min(list.find(',', begin), list.size());
    int32_t id = 0;
    const auto result = std::from_chars(list.data() + begin, list.data() + end, id);
    if (result.ec != std::errc() || result.ptr != list.data() + end || id < 0) {
      throw std::runtime_error("--tokens must be comma-separated non-negative integers, got '" + list + "'");
    }
    ids.push_back(id);
    begin = end + 1;
  }
  return ids;
}

std::vector<int32_t> prompt_ids(const LogitsFlags& flags) {
  if (!flags.tokens.empty()) return parse_token_list(flags.tokens);
  const text::Tokenizer tokenizer = text::Tokenizer::from_file(std::filesystem::path(flags.model) / "tokenizer.json");
  std::string prompt = flags.text;
  text::EncodeOptions options;
  if (flags.chat) {
    const text::ChatTemplate chat_template = text::ChatTemplate::from_model_dir(flags.model);
    const std::vector<text::ChatMessage> messages{{"user", flags.text}};
    prompt = chat_template.render(messages, true, text::Thinking::disabled);
    options.add_special_tokens = false;  // the template spells every special token itself
  }
  std::vector<int32_t> ids = tokenizer.encode(prompt, options).ids;
  if (ids.empty()) throw std::runtime_error("the text encodes to no tokens");
  return ids;
}

void append_float(std::string& out, float value) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, result.ptr);
}

int logits(const LogitsFlags& flags) {
  try {
    const auto precision = decide::parse_precision(flags.dtype);
    if (!precision) throw std::runtime_error("--dtype must be fp32 or bf16");
    const std::vector<int32_t> ids = prompt_ids(flags);
    const auto decoder = model::load_causal_decoder(flags.model, *precision);
    std::vector<std::size_t> positions(flags.positions == "all" ? ids.size() : 1);
    std::iota(positions.begin(), positions.end(), ids.size() - positions.size());
    const decoder::Branch branch{ids, positions};
    const auto outputs = decoder->forward(nullptr, std::span<const decoder::Branch>(&branch, 1), false);
    const std::vector<float> logits = decoder->lm_head().all_logits(outputs.front().hidden);
    const std::size_t vocab = decoder->lm_head().rows();

    std::string line = "{\"token_ids\":[";
    for (std::size_t i = 0; i < ids.size(); ++i) line += (i > 0 ? "," : "") + std::to_string(ids[i]);
    line += "]}\n";
    std::fwrite(line.data(), 1, line.size(), stdout);
    const std::size_t top = std::min(flags.top, vocab);
    std::vector<int32_t> order(vocab);
    for (std::size_t p = 0; p < positions.size(); ++p) {
      const std::span<const float> row(logits.data() + p * vocab, vocab);
      std::iota(order.begin(), order.end(), 0);
      // Highest logit first; equal logits by id, so the output is deterministic.
      std::partial_sort(order.begin(), order.begin() + static_cast<ptrdiff_t>(top), order.end(),
                        [&](int32_t a, int32_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
      line = "{\"position\":" + std::to_string(positions[p]) + ",\"top\":[";
      for (std::size_t k = 0; k < top; ++k) {
        line += (k > 0 ? ",[" : "[") + std::to_string(order[k]) + ",";
        append_float(line, row[order[k]]);
        line += "]";
      }
      line += "]}\n";
      std::fwrite(line.data(), 1, line.size(), stdout);
    }
    std::fflush(stdout);
    if (!flags.out.empty()) {
      const std::vector<std::size_t> shape{positions.size(), vocab};
      write_npy_float32(flags.out, shape, logits);
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "s1serve logits: %s\n", error.what());
    return 2;
  }
  return 0;
}

}  // namespace

void add_logits_command(CLI::App& app) {
  auto flags = std::make_shared<LogitsFlags>();
  CLI::App* command = app.add_subcommand(
      "logits", "Print the token ids and next-token logits of a decoder checkpoint (top K per position, or all to .npy)");
  command->add_option("--model", flags->model, "A decoder checkpoint directory (config.json, model.safetensors)")
      ->required()
      ->check(CLI::ExistingDirectory);
  auto* text = command->add_option("--text", flags->text, "Text to tokenise with the model's tokenizer.json");
  auto* tokens = command->add_option("--tokens", flags->tokens, "Token ids instead of text: 1,2,3");
  text->excludes(tokens);
  command->add_flag("--chat", flags->chat,
                    "Render --text as one user turn of the model's chat template, with the generation prompt and "
                    "thinking off (as the label-token contract prompts)")
      ->needs(text);
  command->add_option("--positions", flags->positions, "Positions to read: last (default) or all")
      ->check(CLI::IsMember({"last", "all"}));
  command->add_option("--top", flags->top, "How many of the highest logits to print per position (default 5)");
  command->add_option("--dtype", flags->dtype, "Matrix-product precision: fp32 (default) or bf16")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  command->add_option("--out", flags->out, "Write every logit of the chosen positions to this .npy file");
  command->callback([flags] {
    if (flags->text.empty() && flags->tokens.empty()) {
      std::fprintf(stderr, "s1serve logits: give --text or --tokens\n");
      std::exit(2);
    }
    std::exit(logits(*flags));
  });
}

}  // namespace s1::cli
