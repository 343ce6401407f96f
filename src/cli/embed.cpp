// `s1serve embed --model DIR_OR_NAME (--text T | --file F.jsonl) [--dtype fp32|bf16]`: what a user
// needs to check a sentence-embedding model against another implementation. One JSON line per text:
// {"text": …, "token_ids": [...], "embedding": [...]} with each float32 component in its shortest
// round-trip decimal form.

#include "cli/embed.h"

#include "api/json.h"
#include "decide/contracts/embedding_similarity.h"
#include "model/bert/sentence_encoder.h"
#include "model/checkpoint/load_error.h"
#include "text/tokenizer.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <stdexcept>

namespace s1::cli {
namespace {

struct EmbedFlags {
  std::string model;
  std::vector<std::string> texts;
  std::string file;
  std::string dtype = "fp32";
};

std::filesystem::path resolve_model(const std::string& source) {
  std::error_code error;
  if (std::filesystem::is_directory(source, error)) return source;
  if (decide::is_default_model_name(source)) {
    const std::filesystem::path dir = decide::default_model_directory();
    if (!std::filesystem::is_directory(dir, error)) {
      throw std::runtime_error("model '" + source + "' is not installed in " + dir.string() +
                               ": run scripts/fetch-default-model (or scripts/setup)");
    }
    return dir;
  }
  throw std::runtime_error("model '" + source + "': no such directory and not a known model name (known: minilm, "
                           "all-minilm-l6-v2)");
}

// A JSONL line is a JSON string or an object {"text": string}.
std::vector<std::string> read_texts(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot be read");
  std::vector<std::string> texts;
  std::string line;
  for (size_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto parsed = api::parse_strict_json(line);
    const std::string where = path + ":" + std::to_string(number);
    if (const auto* error = std::get_if<api::JsonSyntaxError>(&parsed)) {
      throw std::runtime_error(where + ": " + error->message);
    }
    const api::Json& value = std::get<api::Json>(parsed);
    if (value.is_string()) {
      texts.push_back(value.get<std::string>());
    } else if (value.is_object() && value.size() == 1 && value.contains("text") && value["text"].is_string()) {
      texts.push_back(value["text"].get<std::string>());
    } else {
      throw std::runtime_error(where + ": expected a JSON string or an object {\"text\": string}");
    }
  }
  return texts;
}

void append_float(std::string& out, float value) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, result.ptr);
}

int embed(const EmbedFlags& flags) {
  try {
    const auto precision = decide::parse_precision(flags.dtype);
    if (!precision) throw std::runtime_error("--dtype must be fp32 or bf16");
    std::vector<std::string> texts = flags.texts;
    if (!flags.file.empty()) {
      for (std::string& text : read_texts(flags.file)) texts.push_back(std::move(text));
    }
    if (texts.empty()) throw std::runtime_error("nothing to embed: give --text or --file");
    bert::SentenceEncoder encoder = bert::SentenceEncoder::open(resolve_model(flags.model), *precision);
    constexpr size_t batch = 32;
    for (size_t first = 0; first < texts.size(); first += batch) {
      const size_t last = std::min(texts.size(), first + batch);
      std::vector<std::vector<int32_t>> ids;
      for (size_t i = first; i < last; ++i) ids.push_back(encoder.tokenize(texts[i]).ids);
      const std::vector<float> embeddings = encoder.embed(ids);
      for (size_t i = first; i < last; ++i) {
        std::string line = "{\"text\":";
        api::append_json_string(line, texts[i]);
        line += ",\"token_ids\":[";
        for (size_t t = 0; t < ids[i - first].size(); ++t) {
          if (t > 0) line += ',';
          line += std::to_string(ids[i - first][t]);
        }
        line += "],\"embedding\":[";
        const float* row = embeddings.data() + (i - first) * encoder.dimension();
        for (size_t c = 0; c < encoder.dimension(); ++c) {
          if (c > 0) line += ',';
          append_float(line, row[c]);
        }
        line += "]}\n";
        std::fwrite(line.data(), 1, line.size(), stdout);
      }
    }
    std::fflush(stdout);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "s1serve embed: %s\n", error.what());
    return 2;
  }
  return 0;
}

}  // namespace

void add_embed_command(CLI::App& app) {
  auto flags = std::make_shared<EmbedFlags>();
  CLI::App* command = app.add_subcommand(
      "embed", "Print token ids and pooled, normalised embeddings of texts as JSON lines (sentence-embedding models)");
  command->add_option("--model", flags->model, "A sentence-transformers model directory or a known name (minilm)")
      ->required();
  auto* text = command->add_option("--text", flags->texts, "A text to embed (repeatable)");
  auto* file = command->add_option("--file", flags->file, "JSONL file: one JSON string or {\"text\": …} per line")
                   ->check(CLI::ExistingFile);
  text->excludes(file);
  command->add_option("--dtype", flags->dtype, "Matrix-product precision: fp32 (default) or bf16")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  command->callback([flags] { std::exit(embed(*flags)); });
}

}  // namespace s1::cli
