#include "text/tokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace s1::text {
namespace {

std::filesystem::path source_dir() {
  const char* dir = std::getenv("S1SERVE_SOURCE_DIR");
  if (dir == nullptr) throw std::runtime_error("S1SERVE_SOURCE_DIR is not set");
  return dir;
}

std::filesystem::path text_fixtures() { return source_dir() / "tests/parity/text"; }

const Tokenizer& minilm() {
  static const Tokenizer tokenizer = Tokenizer::from_file(text_fixtures() / "minilm/tokenizer.json");
  return tokenizer;
}

std::vector<nlohmann::json> read_json_lines(const std::filesystem::path& path) {
  std::ifstream file(path);
  if (!file) throw std::runtime_error("cannot open " + path.string());
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(file, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

std::string describe(const Tokenizer& tokenizer, const std::vector<int32_t>& ids) {
  std::ostringstream out;
  for (const int32_t id : ids) out << id << ":" << tokenizer.id_to_token(id) << " ";
  return out.str();
}

std::vector<int32_t> ids_of(const std::string& text, EncodeOptions options = {}) {
  return minilm().encode(text, options).ids;
}

// Compares one expectation and records a readable mismatch; returns whether it matched.
bool check(size_t line, const std::string& what, const std::string& text, const std::vector<int32_t>& expected,
           const std::vector<int32_t>& actual, std::vector<std::string>& mismatches) {
  if (expected == actual) return true;
  if (mismatches.size() < 10) {
    mismatches.push_back("corpus line " + std::to_string(line + 1) + " (" + what + ") text " +
                         nlohmann::json(text).dump() + "\n  expected " + describe(minilm(), expected) +
                         "\n  actual   " + describe(minilm(), actual));
  }
  return false;
}

TEST(MiniLmTokenizer, EveryCorpusLineMatchesHfTokenizers) {
  const std::vector<nlohmann::json> corpus = read_json_lines(text_fixtures() / "corpus.jsonl");
  const std::vector<nlohmann::json> expected = read_json_lines(text_fixtures() / "minilm_expected.jsonl");
  ASSERT_GE(corpus.size(), 2000u);
  ASSERT_EQ(expected.size(), corpus.size() + 1) << "fixture header plus one line per corpus line";
  ASSERT_EQ(expected[0]["lines"].get<size_t>(), corpus.size());

  std::vector<std::string> mismatches;
  size_t failures = 0;
  size_t truncation_checks = 0;
  size_t decode_checks = 0;
  for (size_t line = 0; line < corpus.size(); ++line) {
    const auto text = corpus[line].get<std::string>();
    const nlohmann::json& record = expected[line + 1];
    failures += !check(line, "ids", text, record["ids"].get<std::vector<int32_t>>(), ids_of(text), mismatches);
    for (const size_t max_length : {32u, 256u}) {
      const std::string key = "max" + std::to_string(max_length);
      if (!record.contains(key)) continue;
      ++truncation_checks;
      const Encoding encoding = minilm().encode(text, {.add_special_tokens = true, .max_length = max_length});
      failures += !check(line, key, text, record[key]["ids"].get<std::vector<int32_t>>(), encoding.ids, mismatches);
      EXPECT_EQ(encoding.truncated, record[key]["truncated"].get<bool>()) << "corpus line " << line + 1 << " " << key;
    }
    if (record.contains("no_special")) {
      failures += !check(line, "no_special", text, record["no_special"].get<std::vector<int32_t>>(),
                         ids_of(text, {.add_special_tokens = false}), mismatches);
    }
    if (record.contains("decoded")) {
      ++decode_checks;
      const auto ids = record["ids"].get<std::vector<int32_t>>();
      EXPECT_EQ(minilm().decode(ids), record["decoded"].get<std::string>()) << "corpus line " << line + 1;
      EXPECT_EQ(minilm().decode(ids, true), record["decoded_skip_special"].get<std::string>()) << "corpus line " << line + 1;
    }
  }
  EXPECT_GT(truncation_checks, 100u);
  EXPECT_GT(decode_checks, 100u);
  std::string report;
  for (const std::string& mismatch : mismatches) report += mismatch + "\n";
  EXPECT_EQ(failures, 0u) << "first mismatches:\n" << report;
}

TEST(MiniLmTokenizer, InvalidUtf8MatchesHfOnReplacementDecodedText) {
  const std::vector<nlohmann::json> cases = read_json_lines(text_fixtures() / "minilm_invalid_utf8.jsonl");
  ASSERT_FALSE(cases.empty());
  for (const nlohmann::json& test_case : cases) {
    const auto hex = test_case["hex"].get<std::string>();
    std::string bytes;
    for (size_t at = 0; at < hex.size(); at += 2) bytes.push_back(static_cast<char>(std::stoi(hex.substr(at, 2), nullptr, 16)));
    EXPECT_EQ(ids_of(bytes), test_case["ids"].get<std::vector<int32_t>>()) << "bytes " << hex;
  }
}

TEST(MiniLmTokenizer, RandomBytesNeverCrash) {
  std::mt19937 random(1234);
  std::uniform_int_distribution<int> length(0, 64);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int round = 0; round < 5000; ++round) {
    std::string bytes(static_cast<size_t>(length(random)), '\0');
    for (char& c : bytes) c = static_cast<char>(byte(random));
    const Encoding encoding = minilm().encode(bytes, {.max_length = 16});
    ASSERT_GE(encoding.ids.size(), 2u);
    ASSERT_LE(encoding.ids.size(), 16u);
    for (const int32_t id : encoding.ids) ASSERT_LT(static_cast<size_t>(id), minilm().vocab_size());
  }
}

TEST(MiniLmTokenizer, VocabularyAndSpecialTokens) {
  const Tokenizer& tokenizer = minilm();
  EXPECT_EQ(tokenizer.vocab_size(), 30522u);
  EXPECT_EQ(tokenizer.token_to_id("hello"), 7592);
  EXPECT_EQ(tokenizer.token_to_id("##ing"), 2075);
  EXPECT_EQ(tokenizer.token_to_id("definitely-not-a-token"), std::nullopt);
  EXPECT_EQ(tokenizer.id_to_token(7592), "hello");
  EXPECT_EQ(tokenizer.id_to_token(101), "[CLS]");
  EXPECT_EQ(tokenizer.id_to_token(-1), "");
  EXPECT_EQ(tokenizer.id_to_token(30522), "");
  const SpecialTokenIds& special = tokenizer.special_token_ids();
  EXPECT_EQ(special.cls, 101);
  EXPECT_EQ(special.sep, 102);
  EXPECT_EQ(special.pad, 0);
  EXPECT_EQ(special.unk, 100);
  EXPECT_EQ(special.mask, 103);
  ASSERT_TRUE(tokenizer.file_truncation().has_value());
  EXPECT_EQ(tokenizer.file_truncation()->max_length, 128u);
  ASSERT_TRUE(tokenizer.file_padding().has_value());
  EXPECT_EQ(tokenizer.file_padding()->pad_token, "[PAD]");
}

TEST(MiniLmTokenizer, UnknownCharactersAndOverlongWordsBecomeUnk) {
  EXPECT_EQ(ids_of("\xF0\x9F\xA5\xB0"), (std::vector<int32_t>{101, 100, 102}));  // an emoji not in the vocab
  EXPECT_EQ(ids_of(std::string(100, 'x')).size(), 52u);                           // 100 chars: still split
  EXPECT_EQ(ids_of(std::string(101, 'x')), (std::vector<int32_t>{101, 100, 102}));
  EXPECT_EQ(ids_of("hello " + std::string(150, 'a') + " world"), (std::vector<int32_t>{101, 7592, 100, 2088, 102}));
}

TEST(MiniLmTokenizer, SpecialTokenSpellingsAreMatchedBeforeNormalisation) {
  EXPECT_EQ(ids_of("[CLS] hello [SEP]"), (std::vector<int32_t>{101, 101, 7592, 102, 102}));
  EXPECT_EQ(ids_of("a[MASK]b"), (std::vector<int32_t>{101, 1037, 103, 1038, 102}));
  // Lowercase spellings are ordinary text: the normaliser would lowercase anyway, so they split.
  EXPECT_EQ(ids_of("[mask]"), (std::vector<int32_t>{101, 1031, 7308, 1033, 102}));
}

TEST(MiniLmTokenizer, TruncationKeepsFirstContentTokensThenSpecials) {
  std::string text;
  for (int word = 0; word < 400; ++word) text += "hello ";
  const Encoding full = minilm().encode(text);
  EXPECT_EQ(full.ids.size(), 402u);
  EXPECT_FALSE(full.truncated);

  const Encoding cut = minilm().encode(text, {.max_length = 256});
  ASSERT_EQ(cut.ids.size(), 256u);
  EXPECT_TRUE(cut.truncated);
  EXPECT_EQ(cut.ids.front(), 101);
  EXPECT_EQ(cut.ids[254], 7592);
  EXPECT_EQ(cut.ids.back(), 102);

  const Encoding exact = minilm().encode("hello world", {.max_length = 4});
  EXPECT_EQ(exact.ids, (std::vector<int32_t>{101, 7592, 2088, 102}));
  EXPECT_FALSE(exact.truncated);

  const Encoding tight = minilm().encode("hello world", {.max_length = 3});
  EXPECT_EQ(tight.ids, (std::vector<int32_t>{101, 7592, 102}));
  EXPECT_TRUE(tight.truncated);

  // Smaller than the special tokens themselves: no content, specials still present.
  const Encoding tiny = minilm().encode("hello world", {.max_length = 1});
  EXPECT_EQ(tiny.ids, (std::vector<int32_t>{101, 102}));
  EXPECT_TRUE(tiny.truncated);

  const Encoding plain = minilm().encode("hello world again", {.add_special_tokens = false, .max_length = 2});
  EXPECT_EQ(plain.ids, (std::vector<int32_t>{7592, 2088}));
  EXPECT_TRUE(plain.truncated);
}

// A small valid tokenizer.json with one section replaced, for load-error tests.
std::string tokenizer_json(const std::string& section, const std::string& value) {
  nlohmann::json root = {
      {"version", "1.0"},
      {"added_tokens", nlohmann::json::array()},
      {"normalizer", {{"type", "BertNormalizer"}, {"lowercase", true}}},
      {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
      {"post_processor", {{"type", "BertProcessing"}, {"cls", {"[CLS]", 1}}, {"sep", {"[SEP]", 2}}}},
      {"model", {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"vocab", {{"[UNK]", 0}, {"[CLS]", 1}, {"[SEP]", 2}, {"hi", 3}, {"##s", 4}}}}},
  };
  if (!section.empty()) root[section] = nlohmann::json::parse(value);
  return root.dump();
}

std::string load_error(const std::string& json_text) {
  try {
    Tokenizer::from_json(json_text, "test.json");
  } catch (const TokenizerLoadError& error) {
    return error.what();
  }
  return "no error";
}

TEST(MiniLmTokenizer, DecodeFollowsTheWordPieceDecoder) {
  // Expected text from HF tokenizers' decode of the same ids.
  const std::vector<int32_t> sentence = {101, 7592, 1010, 2088, 999, 1045, 1005, 1049, 2182, 1010, 2123, 1005, 1056, 2175, 1012, 102};
  EXPECT_EQ(minilm().decode(sentence), "[CLS] hello, world! i ' m here, don ' t go. [SEP]");
  EXPECT_EQ(minilm().decode(sentence, true), "hello, world! i ' m here, don ' t go.");
  const std::vector<int32_t> pieces = {101, 14477, 20961, 3468, 1001, 1001, 13749, 19204, 17629, 2015, 102};
  EXPECT_EQ(minilm().decode(pieces, true), "unaffable # # ing tokenizers");
  EXPECT_EQ(minilm().decode(std::vector<int32_t>{101, 1037, 1012, 1038, 1029, 1039, 102}), "[CLS] a. b? c [SEP]");
}

TEST(TokenizerLoad, SmallValidTokenizerWorks) {
  const Tokenizer tokenizer = Tokenizer::from_json(tokenizer_json("", ""), "test.json");
  // Expected ids from HF tokenizers on the same JSON.
  EXPECT_EQ(tokenizer.encode("Hi HIs his!").ids, (std::vector<int32_t>{1, 3, 3, 4, 3, 4, 0, 2}));
  EXPECT_EQ(tokenizer.vocab_size(), 5u);
}

TEST(TokenizerLoad, ErrorsNameTheFileAndTheProblem) {
  using testing::HasSubstr;
  EXPECT_THAT(load_error("{not json"), HasSubstr("tokenizer test.json: invalid JSON"));
  EXPECT_THAT(load_error("[]"), HasSubstr("top level must be a JSON object"));
  EXPECT_THAT(load_error(tokenizer_json("model", R"({"type": "Unigram", "vocab": []})")),
              HasSubstr("model type 'Unigram' is not supported"));
  EXPECT_THAT(load_error(tokenizer_json("model", "null")), HasSubstr("model section is missing"));
  EXPECT_THAT(load_error(tokenizer_json("model", R"({"type": "WordPiece", "vocab": {"a": 0}})")),
              HasSubstr("unk_token '[UNK]' is not in the vocab"));
  EXPECT_THAT(load_error(tokenizer_json("model", R"({"type": "WordPiece", "vocab": [1, 2]})")),
              HasSubstr("'vocab' must be an object"));
  EXPECT_THAT(load_error(tokenizer_json("model", R"({"type": "WordPiece", "vocab": {"[UNK]": 0, "a": 0}})")),
              HasSubstr("used by more than one token"));
  EXPECT_THAT(load_error(tokenizer_json("normalizer", R"({"type": "Sequence", "normalizers": [{"type": "NFKC"}]})")),
              HasSubstr("normalizer type 'NFKC' is not supported"));
  EXPECT_THAT(load_error(tokenizer_json("normalizer", R"({"type": "BertNormalizer", "lowercase": "yes"})")),
              HasSubstr("field 'lowercase' has the wrong type"));
  EXPECT_THAT(load_error(tokenizer_json("pre_tokenizer", R"({"type": "Whitespace"})")),
              HasSubstr("pre_tokenizer type 'Whitespace' is not supported"));
  EXPECT_THAT(load_error(tokenizer_json("pre_tokenizer", R"({"type": "Metaspace"})")),
              HasSubstr("pre_tokenizer Metaspace: missing field 'replacement'"));
  EXPECT_THAT(load_error(tokenizer_json("pre_tokenizer", R"({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "sometimes"})")),
              HasSubstr("prepend_scheme 'sometimes' is not supported"));
  EXPECT_THAT(load_error(tokenizer_json("normalizer", R"({"type": "Replace", "pattern": {"String": ""}, "content": "x"})")),
              HasSubstr("normalizer Replace: empty String pattern"));
  EXPECT_THAT(load_error(tokenizer_json("decoder", R"({"type": "Strip", "content": "ab", "start": 1, "stop": 0})")),
              HasSubstr("decoder Strip: 'content' must be one character"));
  EXPECT_THAT(load_error(tokenizer_json("pre_tokenizer", R"({"type": "ByteLevel"})")),
              HasSubstr("add_prefix_space true is not supported"));
  EXPECT_THAT(load_error(tokenizer_json("post_processor", R"({"type": "RobertaProcessing"})")),
              HasSubstr("post_processor type 'RobertaProcessing' is not supported"));
  EXPECT_THAT(load_error(tokenizer_json("post_processor", R"({"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
      "special_tokens": {}})")),
              HasSubstr("special token '[CLS]' is not in special_tokens"));
  EXPECT_THAT(load_error(tokenizer_json("added_tokens", R"([{"content": "x"}])")), HasSubstr("missing field 'id'"));
  EXPECT_THAT(load_error(tokenizer_json("normalizer", R"({"kind": "BertNormalizer"})")),
              HasSubstr("normalizer: missing field 'type'"));
}

TEST(TokenizerLoad, MissingFileNamesThePath) {
  try {
    Tokenizer::from_file("/nonexistent/dir/tokenizer.json");
    FAIL() << "expected a load error";
  } catch (const TokenizerLoadError& error) {
    EXPECT_THAT(error.what(), testing::HasSubstr("/nonexistent/dir/tokenizer.json"));
  }
}

TEST(TokenizerLoad, AddedTokenFlagsFollowHf) {
  const std::string json = tokenizer_json("added_tokens", R"([
      {"id": 5, "content": "<m>", "single_word": true, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
      {"id": 6, "content": "<s>", "single_word": false, "lstrip": true, "rstrip": true, "normalized": false, "special": true},
      {"id": 7, "content": "HIS", "single_word": false, "lstrip": false, "rstrip": false, "normalized": true, "special": false}])");
  const Tokenizer tokenizer = Tokenizer::from_json(json, "test.json");
  // Expected ids from HF tokenizers on the same JSON. single_word: only matched when not glued to
  // word characters.
  EXPECT_EQ(tokenizer.encode("hi <m> hi", {.add_special_tokens = false}).ids, (std::vector<int32_t>{3, 5, 3}));
  EXPECT_EQ(tokenizer.encode("hi<m>", {.add_special_tokens = false}).ids, (std::vector<int32_t>{3, 0, 0, 0}));
  EXPECT_EQ(tokenizer.encode("<m>hi", {.add_special_tokens = false}).ids, (std::vector<int32_t>{0, 0, 0, 3}));
  // lstrip/rstrip swallow surrounding whitespace; normalized tokens match after lowercasing.
  EXPECT_EQ(tokenizer.encode("hi  <s>  his", {.add_special_tokens = false}).ids, (std::vector<int32_t>{3, 6, 7}));
  EXPECT_EQ(tokenizer.token_to_id("<s>"), 6);
  EXPECT_EQ(tokenizer.token_to_id("HIS"), 7);
  EXPECT_EQ(tokenizer.vocab_size(), 8u);
}

}  // namespace
}  // namespace s1::text
