#include "model/checkpoint/gguf_tokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/checkpoint/mapped_file.h"
#include "source_dir.h"

namespace s1::checkpoint {
namespace {

using ::testing::HasSubstr;

using testing::source_dir;

std::vector<std::string> corpus() {
  std::ifstream file(source_dir() / "tests/parity/text/corpus.jsonl");
  std::vector<std::string> texts;
  for (std::string line; std::getline(file, line);) {
    if (!line.empty()) texts.push_back(nlohmann::json::parse(line).get<std::string>());
  }
  if (texts.size() < 1000) throw std::runtime_error("the text corpus is missing");
  return texts;
}

text::Tokenizer tokenizer_of(const std::filesystem::path& gguf_file) {
  const auto mapped = MappedFile::open(gguf_file);
  return gguf_tokenizer(parse_gguf(mapped.bytes(), gguf_file.string()));
}

// Token for token (and the decoded text of those tokens) against the model's own tokenizer.json on
// every line of the corpus, special tokens added as each file says.
void expect_same_tokenizer(const text::Tokenizer& from_gguf, const text::Tokenizer& from_json) {
  EXPECT_EQ(from_gguf.vocab_size(), from_json.vocab_size());
  std::size_t line = 0;
  for (const std::string& text : corpus()) {
    const auto ids = from_gguf.encode(text).ids;
    ASSERT_EQ(ids, from_json.encode(text).ids) << "corpus line " << line;
    ASSERT_EQ(from_gguf.decode(ids), from_json.decode(ids)) << "corpus line " << line;
    ++line;
  }
}

// tiny-qwen3.gguf carries tiny-qwen3-chat's vocabulary as convert_hf_to_gguf.py writes it (model
// gpt2, pre qwen2); tiny-qwen35.gguf the Qwen3.5 tiny tokenizer's (pre qwen35).
TEST(GgufTokenizer, ByteLevelBpeMatchesTheModelsTokenizerJson) {
  const auto fixtures = source_dir() / "tests/fixtures";
  expect_same_tokenizer(tokenizer_of(fixtures / "gguf/tiny-qwen3.gguf"),
                        text::Tokenizer::from_file(fixtures / "tiny-qwen3-chat/tokenizer.json"));
  expect_same_tokenizer(tokenizer_of(fixtures / "gguf/tiny-qwen35.gguf"),
                        text::Tokenizer::from_file(fixtures / "qwen-tiny-tokenizer/qwen3_5/tokenizer.json"));
}

// A SentencePiece BPE vocabulary (model llama) against the tokenizer.json Transformers converts the
// same model to: HF tokenizers' own ids where recorded, and s1serve's loading of that file on every
// line.
// The "lfm2" pre-tokeniser against llama.cpp's own tokenizer (llama-cpp-python, vocab only) on every
// corpus line: tiny-lfm2-vocab.gguf is tiny-qwen3.gguf's vocabulary under pre "lfm2"
// (tools/reference/make_llama_cpp_tokens.py). Its digit runs ({1,3}), missing NFC and ignore_merges
// all differ from qwen2's, which the second half shows on the same lines.
TEST(GgufTokenizer, Lfm2PreTokenizerMatchesLlamaCpp) {
  const auto directory = source_dir() / "tests/fixtures/gguf/llama_cpp";
  const text::Tokenizer tokenizer = tokenizer_of(directory / "tiny-lfm2-vocab.gguf");
  std::ifstream file(directory / "tiny-lfm2-vocab-tokens.json");
  const auto expected = nlohmann::json::parse(file).at("ids").get<std::vector<std::vector<int32_t>>>();
  const std::vector<std::string> texts = corpus();
  ASSERT_EQ(expected.size(), texts.size());
  const text::Tokenizer qwen2 = tokenizer_of(source_dir() / "tests/fixtures/gguf/tiny-qwen3.gguf");
  std::size_t differ_from_qwen2 = 0;
  std::vector<std::size_t> differ_from_llama_cpp;
  for (std::size_t line = 0; line < texts.size(); ++line) {
    const auto ids = tokenizer.encode(texts[line]).ids;
    if (ids != expected[line]) differ_from_llama_cpp.push_back(line);
    if (qwen2.encode(texts[line]).ids != ids) ++differ_from_qwen2;
  }
  // Lines 2087 and 2089 hold letters new in Unicode 15 (U+11F28 Kawi; U+3158D and others, CJK
  // extension H), unassigned in our tables (Unicode 14, as Python's and the Transformers
  // tokenizers' references) and letters in llama.cpp's unicode-data.cpp, which joins them to the
  // " a" before them. A difference of Unicode versions, not of the pre-tokeniser.
  EXPECT_EQ(differ_from_llama_cpp, (std::vector<std::size_t>{2087, 2089}));
  EXPECT_GT(differ_from_qwen2, 0u);
  RecordProperty("lines_qwen2_tokenizes_differently", std::to_string(differ_from_qwen2));
}

TEST(GgufTokenizer, SentencePieceMatchesTheModelsTokenizerJson) {
  const auto folder = source_dir() / "tests/fixtures/gguf/sentencepiece";
  const auto from_gguf = tokenizer_of(folder / "vocab.gguf");
  const auto texts = corpus();
  std::ifstream expected(folder / "expected.jsonl");
  std::size_t checked = 0;
  for (std::string line; std::getline(expected, line); ++checked) {
    const auto record = nlohmann::json::parse(line);
    const auto index = record["line"].get<std::size_t>();
    ASSERT_LT(index, texts.size());
    ASSERT_EQ(from_gguf.encode(texts[index]).ids, record["ids"].get<std::vector<int32_t>>()) << "corpus line " << index;
  }
  EXPECT_GT(checked, 1000u);
  expect_same_tokenizer(from_gguf, text::Tokenizer::from_file(folder / "tokenizer.json"));
}

std::string load_error(const text::GgufVocabulary& vocabulary) {
  try {
    text::tokenizer_from_gguf(vocabulary, "model.gguf");
  } catch (const text::TokenizerLoadError& error) {
    return error.what();
  }
  return "no error";
}

TEST(GgufTokenizer, RefusesWhatItCannotBuildByKey) {
  text::GgufVocabulary vocabulary;
  vocabulary.model = "gpt2";
  vocabulary.pre = "qwen2";
  vocabulary.tokens = {"a", "b", "ab"};
  vocabulary.merges = {"a b"};
  EXPECT_EQ(text::tokenizer_from_gguf(vocabulary, "model.gguf").encode("ab").ids, std::vector<int32_t>{2});
  auto other = vocabulary;
  other.model = "bert";
  EXPECT_THAT(load_error(other), HasSubstr("key 'tokenizer.ggml.model' is 'bert'; supported: gpt2, llama"));
  other = vocabulary;
  other.pre = "llama-bpe";
  EXPECT_THAT(load_error(other), HasSubstr("key 'tokenizer.ggml.pre' is 'llama-bpe'"));
  other = vocabulary;
  other.merges = {"ab"};
  EXPECT_THAT(load_error(other), HasSubstr("key 'tokenizer.ggml.merges' entry 'ab' is not two tokens"));
  other = vocabulary;
  other.merges = {"a \x96"};
  EXPECT_THAT(load_error(other), HasSubstr("key 'tokenizer.ggml.merges' holds an entry that is not UTF-8"));
  other = vocabulary;
  other.tokens.push_back("a");
  EXPECT_THAT(load_error(other), HasSubstr("key 'tokenizer.ggml.tokens' holds 'a' twice"));
  other = vocabulary;
  other.token_types = {1, 1};
  EXPECT_THAT(load_error(other), HasSubstr("key 'tokenizer.ggml.token_type' has 2 entries for 3 tokens"));
  other = vocabulary;
  other.add_bos = true;
  EXPECT_THAT(load_error(other), HasSubstr("key 'tokenizer.ggml.bos_token_id' is missing"));
  other = vocabulary;
  other.eos_id = 3;
  EXPECT_THAT(load_error(other), HasSubstr("key 'tokenizer.ggml.eos_token_id' is 3, not a token id"));
}

}  // namespace
}  // namespace s1::checkpoint
