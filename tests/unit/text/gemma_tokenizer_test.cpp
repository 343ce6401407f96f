// The SentencePiece-style components (Replace and Prepend normalisers, Metaspace and the Split
// behaviours, the Replace/ByteFallback/Fuse/Strip/Metaspace decoders) against HF `tokenizers`, on the
// tiny Gemma-style tokenizer of tests/fixtures/gemma-tiny-tokenizer and the variants of its sections
// that tools/reference/make_gemma_tiny_tokenizer.py wrote goldens for: ids with and without special
// tokens exactly, and decode() exactly.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace s1::text {
namespace {

std::filesystem::path fixture_dir() {
  const char* dir = std::getenv("S1SERVE_SOURCE_DIR");
  if (dir == nullptr) throw std::runtime_error("S1SERVE_SOURCE_DIR is not set");
  return std::filesystem::path(dir) / "tests/fixtures/gemma-tiny-tokenizer";
}

nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream file(path);
  if (!file) throw std::runtime_error("cannot open " + path.string());
  return nlohmann::json::parse(file);
}

std::vector<nlohmann::json> read_json_lines(const std::filesystem::path& path) {
  std::ifstream file(path);
  if (!file) throw std::runtime_error("cannot open " + path.string());
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(file, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

TEST(GemmaTokenizer, EveryVariantMatchesHfTokenizers) {
  const nlohmann::json base = read_json(fixture_dir() / "tokenizer.json");
  const nlohmann::json variants = read_json(fixture_dir() / "variants.json");
  std::map<std::string, Tokenizer> tokenizers;
  for (const auto& [name, sections] : variants.items()) {
    nlohmann::json spec = base;
    for (const auto& [section, value] : sections.items()) spec[section] = value;
    tokenizers.emplace(name, Tokenizer::from_json(spec.dump(), name));
  }
  const std::vector<nlohmann::json> lines = read_json_lines(fixture_dir() / "expected.jsonl");
  ASSERT_GT(lines.size(), 1U);
  EXPECT_EQ(lines.size() - 1, variants.size() * lines.front()["texts"].get<std::size_t>());
  EncodeOptions plain;
  plain.add_special_tokens = false;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const nlohmann::json& line = lines[i];
    const Tokenizer& tokenizer = tokenizers.at(line["variant"].get<std::string>());
    const std::string text = line["text"].get<std::string>();
    SCOPED_TRACE(line["variant"].get<std::string>() + ": " + line.dump());
    const std::vector<int32_t> ids = tokenizer.encode(text, plain).ids;
    EXPECT_EQ(ids, line["ids"].get<std::vector<int32_t>>());
    EXPECT_EQ(tokenizer.encode(text).ids, line["ids_with_special"].get<std::vector<int32_t>>());
    if (line.contains("decoded")) {
      EXPECT_EQ(tokenizer.decode(ids), line["decoded"].get<std::string>());
    }
  }
}

TEST(GemmaTokenizer, MetaspaceOnlyLeadsASequence) {
  nlohmann::json spec = read_json(fixture_dir() / "tokenizer.json");
  spec["normalizer"] = nullptr;
  spec["pre_tokenizer"] = {{"type", "Sequence"},
                           {"pretokenizers",
                            {{{"type", "Split"}, {"pattern", {{"String", "e"}}}, {"behavior", "Isolated"}},
                             {{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "first"}}}}};
  try {
    (void)Tokenizer::from_json(spec.dump(), "late-metaspace.json");
    FAIL() << "a Metaspace after another stage must not load";
  } catch (const TokenizerLoadError& error) {
    EXPECT_NE(std::string(error.what()).find("Metaspace is only supported as the first stage"), std::string::npos)
        << error.what();
    EXPECT_NE(std::string(error.what()).find("late-metaspace.json"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace s1::text
