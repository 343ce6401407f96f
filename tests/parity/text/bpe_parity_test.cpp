// Byte-level BPE tokenizers against HF `tokenizers`: ids and decoded text for every expectation in
// tests/parity/text/*_expected.jsonl (tools/reference/make_tokenizer_fixtures.py). Covered: the tiny
// Qwen tokenizers (tests/fixtures/qwen-tiny-tokenizer and its qwen3_5/ variant), the real Qwen2 vocab (rebuilt from
// llama.cpp's GGUF, committed xz-compressed) and its Qwen3.5 variant (Qwen3.5's split pattern).

#include <gtest/gtest.h>
#include <lzma.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "source_files.h"
#include "text/tokenizer.h"

namespace s1::text {
namespace {

using test::read_file;
using test::source_dir;

std::filesystem::path text_fixtures() { return source_dir() / "tests/parity/text"; }

std::string xz_decompress(const std::filesystem::path& path) {
  const std::string compressed = read_file(path);
  lzma_stream stream = LZMA_STREAM_INIT;
  if (lzma_stream_decoder(&stream, UINT64_MAX, 0) != LZMA_OK) throw std::runtime_error("lzma_stream_decoder failed");
  std::string text;
  std::vector<uint8_t> chunk(1 << 20);
  stream.next_in = reinterpret_cast<const uint8_t*>(compressed.data());
  stream.avail_in = compressed.size();
  lzma_ret status = LZMA_OK;
  while (status == LZMA_OK) {
    stream.next_out = chunk.data();
    stream.avail_out = chunk.size();
    status = lzma_code(&stream, LZMA_FINISH);
    text.append(reinterpret_cast<const char*>(chunk.data()), chunk.size() - stream.avail_out);
  }
  lzma_end(&stream);
  if (status != LZMA_STREAM_END) throw std::runtime_error("cannot decompress " + path.string());
  return text;
}

std::vector<nlohmann::json> read_json_lines(const std::filesystem::path& path) {
  std::ifstream file(path);
  if (!file) throw std::runtime_error("cannot open " + path.string());
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(file, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

std::string qwen2_json() {
  static const std::string text = xz_decompress(text_fixtures() / "qwen2-tokenizer.json.xz");
  return text;
}

// The same vocab with Qwen3.5's split pattern, exactly as make_tokenizer_fixtures.py derives it.
std::string qwen3_5_json() {
  nlohmann::json spec = nlohmann::json::parse(qwen2_json());
  spec["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  return spec.dump();
}

std::string hex_to_bytes(const std::string& hex) {
  std::string bytes;
  for (size_t at = 0; at + 1 < hex.size(); at += 2) {
    bytes.push_back(static_cast<char>(std::stoi(hex.substr(at, 2), nullptr, 16)));
  }
  return bytes;
}

std::string describe(const Tokenizer& tokenizer, const std::vector<int32_t>& ids) {
  std::string out;
  for (const int32_t id : ids) out += std::to_string(id) + ":" + std::string(tokenizer.id_to_token(id)) + " ";
  return out;
}

// Checks every record of one expected file, reporting the first 10 mismatches readably.
void expect_matches_fixture(const Tokenizer& tokenizer, const std::string& fixture) {
  const std::vector<nlohmann::json> corpus = read_json_lines(text_fixtures() / "corpus.jsonl");
  const std::vector<nlohmann::json> records = read_json_lines(text_fixtures() / fixture);
  ASSERT_FALSE(records.empty());
  const nlohmann::json& header = records.front();
  const size_t expected_records =
      header["lines"].get<size_t>() + header["cases"].get<size_t>() + header["invalid_utf8"].get<size_t>();
  ASSERT_EQ(records.size(), expected_records + 1) << fixture << " is truncated";
  std::vector<std::string> mismatches;
  size_t failures = 0;
  size_t decoded_checks = 0;
  for (size_t index = 1; index < records.size(); ++index) {
    const nlohmann::json& record = records[index];
    std::string text;
    std::string where;
    if (record.contains("line")) {
      text = corpus.at(record["line"].get<size_t>()).get<std::string>();
      where = "corpus line " + std::to_string(record["line"].get<size_t>() + 1);
    } else if (record.contains("text")) {
      text = record["text"].get<std::string>();
      where = "case " + std::to_string(index);
    } else {
      text = hex_to_bytes(record["hex"].get<std::string>());
      where = "invalid UTF-8 " + record["hex"].get<std::string>();
    }
    const auto expected = record["ids"].get<std::vector<int32_t>>();
    const std::vector<int32_t> actual = tokenizer.encode(text).ids;
    bool ok = expected == actual;
    std::string detail =
        "\n  expected " + describe(tokenizer, expected) + "\n  actual   " + describe(tokenizer, actual);
    for (const auto& [key, skip] : {std::pair{"decoded", false}, std::pair{"decoded_skip_special", true}}) {
      if (!record.contains(key)) continue;
      ++decoded_checks;
      const std::string decoded = tokenizer.decode(expected, skip);
      if (decoded != record[key].get<std::string>()) {
        ok = false;
        detail +=
            std::string("\n  ") + key + " expected " + record[key].dump() + " actual " + nlohmann::json(decoded).dump();
      }
    }
    if (ok) continue;
    ++failures;
    if (mismatches.size() < 10) mismatches.push_back(where + " text " + nlohmann::json(text).dump() + detail);
  }
  std::string report;
  for (const std::string& mismatch : mismatches) report += mismatch + "\n";
  EXPECT_EQ(failures, 0u) << fixture << ": " << failures << " of " << records.size() - 1 << " records differ\n"
                          << report;
  EXPECT_GT(decoded_checks, 100u);
}

TEST(QwenTinyTokenizer, MatchesHfOnCorpusCasesAndInvalidUtf8) {
  const Tokenizer tokenizer = Tokenizer::from_file(source_dir() / "tests/fixtures/qwen-tiny-tokenizer/tokenizer.json");
  expect_matches_fixture(tokenizer, "qwen_tiny_expected.jsonl");
}

TEST(QwenTinyTokenizer, Qwen3_5VariantMatchesHfOnCorpusCasesAndInvalidUtf8) {
  const Tokenizer tokenizer =
      Tokenizer::from_file(source_dir() / "tests/fixtures/qwen-tiny-tokenizer/qwen3_5/tokenizer.json");
  expect_matches_fixture(tokenizer, "qwen3_5_tiny_expected.jsonl");
}

TEST(Qwen2Tokenizer, MatchesHfOnCorpusCasesAndInvalidUtf8) {
  const Tokenizer tokenizer = Tokenizer::from_json(qwen2_json(), "qwen2-tokenizer.json");
  EXPECT_EQ(tokenizer.vocab_size(), 151646u);
  expect_matches_fixture(tokenizer, "qwen2_expected.jsonl");
}

TEST(Qwen3_5Tokenizer, MatchesHfOnCorpusCasesAndInvalidUtf8) {
  const Tokenizer tokenizer = Tokenizer::from_json(qwen3_5_json(), "qwen3_5-tokenizer.json");
  expect_matches_fixture(tokenizer, "qwen3_5_expected.jsonl");
}

// The Llama-3 post-processor layout, a Sequence of ByteLevel and TemplateProcessing, on the tiny
// Qwen vocab (tools/reference/make_sequence_processor_fixtures.py writes the section and HF's ids).
TEST(SequencePostProcessor, MatchesHfWithAndWithoutSpecialTokensAndTruncated) {
  const std::vector<nlohmann::json> lines = read_json_lines(text_fixtures() / "sequence_processor_expected.jsonl");
  nlohmann::json spec =
      nlohmann::json::parse(read_file(source_dir() / "tests/fixtures/qwen-tiny-tokenizer/tokenizer.json"));
  spec["post_processor"] = lines.front()["post_processor"];
  const Tokenizer tokenizer = Tokenizer::from_json(spec.dump(), "llama3-layout");
  ASSERT_GT(lines.size(), 5u);
  for (size_t index = 1; index < lines.size(); ++index) {
    const nlohmann::json& record = lines[index];
    const std::string text = record["text"].get<std::string>();
    EXPECT_EQ(tokenizer.encode(text).ids, record["ids"].get<std::vector<int32_t>>()) << text;
    EXPECT_EQ(tokenizer.encode(text, {.add_special_tokens = false}).ids,
              record["ids_without_special"].get<std::vector<int32_t>>())
        << text;
    EXPECT_EQ(tokenizer.encode(text, {.max_length = 6}).ids, record["ids_truncated_6"].get<std::vector<int32_t>>())
        << text;
  }
  EXPECT_EQ(tokenizer.special_token_ids().cls, 3030);
  EXPECT_EQ(tokenizer.special_token_ids().sep, 3029);
}

}  // namespace
}  // namespace s1::text
