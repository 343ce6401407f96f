// Byte-level BPE pieces on their own: the hand-written Qwen split against PCRE2 running the same
// pattern, BPE merge/unk/byte-fallback rules on small vocabs (expected ids measured with HF
// tokenizers 0.23.3), and load errors for what is not supported.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "text/regex_split.h"
#include "text/tokenizer.h"
#include "text/unicode.h"
#include "text/utf8.h"

namespace s1::text {
namespace {

std::filesystem::path source_dir() {
  const char* dir = std::getenv("S1SERVE_SOURCE_DIR");
  if (dir == nullptr) throw std::runtime_error("S1SERVE_SOURCE_DIR is not set");
  return dir;
}

std::vector<std::string> corpus_lines() {
  std::ifstream file(source_dir() / "tests/parity/text/corpus.jsonl");
  if (!file) throw std::runtime_error("cannot open corpus.jsonl");
  std::vector<std::string> lines;
  for (std::string line; std::getline(file, line);) lines.push_back(nlohmann::json::parse(line).get<std::string>());
  return lines;
}

// Random text over what the Qwen pattern tells apart (letters, marks, numbers, spaces, newlines,
// apostrophes and contraction letters, punctuation) plus code points from every plane.
std::vector<std::string> random_texts(size_t count) {
  const std::vector<std::string> pool = {
      "a", "Z", "s", "S", "t", "re", "VE", "m", "ll", "D", "'", "'", " ", " ", "  ", "\t", "\n", "\r", "\r\n",
      "\v", "\f", "0", "7", ".", ",", "!", "\"", "-", "_", "(", "\xC2\xA0", "\xC2\x85", "\xE3\x80\x80",
      "\xE2\x80\xA8", "\xC5\xBF", "\xC3\xA9", "\xCC\x81", "\xCC\x88", "\xE0\xA4\x95", "\xE0\xA5\x8D",
      "\xE4\xB8\xAD", "\xD9\xA3", "\xE2\x85\xA3", "\xF0\x9F\x98\x80", "\xE2\x80\x8D", "\xEF\xB8\x8F", "\xEF\xBC\x91"};
  std::mt19937 random(20261129);
  std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
  std::uniform_int_distribution<size_t> length(1, 48);
  std::uniform_int_distribution<uint32_t> code_point(1, 0x10FFFF);
  std::vector<std::string> texts;
  texts.reserve(count);
  for (size_t index = 0; index < count; ++index) {
    std::string text;
    const size_t size = length(random);
    for (size_t part = 0; part < size; ++part) {
      if (random() % 6 == 0) {
        char32_t any = code_point(random);
        if (any >= 0xD800 && any <= 0xDFFF) any = 0xFFFD;
        text += encode_utf8(any).view();
      } else {
        text += pool[pick(random)];
      }
    }
    texts.push_back(std::move(text));
  }
  return texts;
}

// Code points whose \p{L}, \p{M}, \p{N} or \s membership differs between this PCRE2 build and the
// Oniguruma tables the fast path uses (measured from HF): the two libraries follow different
// Unicode versions. Found by matching each class over a string of every code point.
std::vector<bool> unicode_version_differences() {
  std::string everything;
  std::vector<size_t> offsets;
  for (char32_t code_point = 0; code_point <= 0x10FFFF; ++code_point) {
    if (code_point >= 0xD800 && code_point <= 0xDFFF) continue;
    offsets.push_back(everything.size());
    everything += encode_utf8(code_point).view();
  }
  std::vector<bool> differs(0x110000, false);
  const std::pair<const char*, bool (*)(char32_t)> classes[] = {
      {R"(\p{L})", unicode::is_regex_letter},
      {R"(\p{M})", unicode::is_regex_mark},
      {R"(\p{N})", unicode::is_regex_number},
      {R"(\s)", unicode::is_regex_space}};
  for (const auto& [pattern, in_table] : classes) {
    std::vector<bool> in_pcre2(0x110000, false);
    for (const detail::MatchSpan& match : detail::make_pcre2_matcher(pattern, false)->find_all(everything)) {
      in_pcre2[decode_utf8(everything, match.begin).code_point] = true;
    }
    for (const size_t offset : offsets) {
      const char32_t code_point = decode_utf8(everything, offset).code_point;
      if (in_pcre2[code_point] != in_table(code_point)) differs[code_point] = true;
    }
  }
  return differs;
}

// The text with every code point the two Unicode versions disagree on replaced by U+FFFD, which
// both class the same, so a remaining difference can only come from the matching logic.
std::string agreed_text(std::string_view text, const std::vector<bool>& differs) {
  std::string result;
  for (size_t position = 0; position < text.size();) {
    const DecodedChar decoded = decode_utf8(text, position);
    result += differs[decoded.code_point] ? encode_utf8(kReplacementCharacter).view() : text.substr(position, decoded.length);
    position += decoded.length;
  }
  return result;
}

void expect_fast_path_matches_pcre2(std::string_view pattern) {
  const std::unique_ptr<detail::RegexMatcher> fast = detail::make_known_matcher(pattern);
  ASSERT_NE(fast, nullptr);
  const std::unique_ptr<detail::RegexMatcher> pcre2 = detail::make_pcre2_matcher(std::string(pattern), false);
  static const std::vector<bool> differs = unicode_version_differences();
  // Version drift only: recently assigned characters, nothing in the first 0x800 code points.
  const auto drift = static_cast<size_t>(std::count(differs.begin(), differs.end(), true));
  EXPECT_LT(drift, 10000u);
  EXPECT_EQ(std::find(differs.begin(), differs.begin() + 0x800, true), differs.begin() + 0x800);
  std::vector<std::string> texts = corpus_lines();
  const std::vector<std::string> random = random_texts(20000);
  texts.insert(texts.end(), random.begin(), random.end());
  size_t differences = 0;
  for (const std::string& raw : texts) {
    const std::string text = agreed_text(to_valid_utf8(raw), differs);
    const std::vector<detail::MatchSpan> expected = pcre2->find_all(text);
    const std::vector<detail::MatchSpan> actual = fast->find_all(text);
    if (expected == actual) continue;
    ++differences;
    if (differences <= 5) {
      ADD_FAILURE() << "split of " << nlohmann::json(text).dump() << " differs from PCRE2 (" << expected.size()
                    << " vs " << actual.size() << " matches)";
    }
  }
  EXPECT_EQ(differences, 0u) << "of " << texts.size() << " texts";
}

TEST(QwenSplit, Qwen2FastPathMatchesPcre2OnCorpusAndRandomText) {
  expect_fast_path_matches_pcre2(detail::kQwen2SplitPattern);
}

TEST(QwenSplit, Qwen3_5FastPathMatchesPcre2OnCorpusAndRandomText) {
  expect_fast_path_matches_pcre2(detail::kQwen3_5SplitPattern);
}

TEST(QwenSplit, LongRunsMatchPcre2) {
  // Long runs are where a JIT regex stack runs out; both matchers must still split them whole.
  const std::vector<std::string> texts = {std::string(200000, ' ') + "x", std::string(100000, '\n') + " ",
                                          std::string(300000, 'a'), " " + std::string(100000, '!') + "\r\n\r\n"};
  for (const std::string_view pattern : {detail::kQwen2SplitPattern, detail::kQwen3_5SplitPattern}) {
    const std::unique_ptr<detail::RegexMatcher> fast = detail::make_known_matcher(pattern);
    const std::unique_ptr<detail::RegexMatcher> pcre2 = detail::make_pcre2_matcher(std::string(pattern), false);
    for (const std::string& text : texts) {
      const std::vector<detail::MatchSpan> expected = pcre2->find_all(text);
      EXPECT_EQ(fast->find_all(text), expected) << text.substr(0, 8);
      EXPECT_LE(expected.size(), 3u);
    }
  }
}

TEST(QwenSplit, OtherPatternsHaveNoFastPath) {
  EXPECT_EQ(detail::make_known_matcher(R"(\s+)"), nullptr);
}

std::vector<std::string> pieces(std::string_view pattern, std::string_view text) {
  const std::vector<std::string_view> views = detail::split_isolated(text, *detail::make_known_matcher(pattern));
  return {views.begin(), views.end()};
}

TEST(QwenSplit, KnownSplits) {
  using Pieces = std::vector<std::string>;
  // Measured with HF's Split on the same pattern.
  EXPECT_EQ(pieces(detail::kQwen2SplitPattern, "I'm  fine,\n\n  ok 123"),
            (Pieces{"I", "'m", " ", " fine", ",\n\n", " ", " ok", " ", "1", "2", "3"}));
  EXPECT_EQ(pieces(detail::kQwen2SplitPattern, "'\xC5\xBFx"), (Pieces{"'\xC5\xBF", "x"}));
  // Qwen3.5 keeps a combining mark with its letter; Qwen2 splits it off.
  EXPECT_EQ(pieces(detail::kQwen3_5SplitPattern, "e\xCC\x81t\xC3\xA9"), (Pieces{"e\xCC\x81t\xC3\xA9"}));
  EXPECT_EQ(pieces(detail::kQwen2SplitPattern, "e\xCC\x81t\xC3\xA9"), (Pieces{"e", "\xCC\x81t\xC3\xA9"}));
}

std::string bpe_tokenizer_json(const nlohmann::json& model) {
  return nlohmann::json{{"version", "1.0"}, {"added_tokens", nlohmann::json::array()}, {"normalizer", nullptr},
                        {"pre_tokenizer", nullptr}, {"post_processor", nullptr}, {"decoder", nullptr},
                        {"model", model}}
      .dump();
}

// Small vocabs, one rule each; ids from HF tokenizers with the same tokenizer.json.
constexpr std::string_view kBpeCases = R"json([
    {"name": "priority", "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null, "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false, "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 4, "abc": 5, "aa": 6}, "merges": ["b c", "a b", "a bc", "a a"]}, "ids": {"abc": [5], "ab": [3], "aaa": [6, 0], "aaaa": [6, 6], "cab": [2, 3], "abcabc": [5, 5], "d": []}},
    {"name": "pair_form", "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null, "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false, "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 4, "abc": 5, "aa": 6}, "merges": [["a", "b"], ["b", "c"], ["ab", "c"], ["a", "a"]]}, "ids": {"abc": [5], "ab": [3], "aaa": [6, 0], "bcbc": [4, 4]}},
    {"name": "unk", "model": {"type": "BPE", "dropout": null, "unk_token": "<unk>", "continuing_subword_prefix": null, "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false, "vocab": {"<unk>": 0, "a": 1, "b": 2, "ab": 3}, "merges": ["a b"]}, "ids": {"abxyab": [3, 0, 0, 3], "xx": [0, 0], "x": [0]}},
    {"name": "fuse_unk", "model": {"type": "BPE", "dropout": null, "unk_token": "<unk>", "continuing_subword_prefix": null, "end_of_word_suffix": null, "fuse_unk": true, "byte_fallback": false, "ignore_merges": false, "vocab": {"<unk>": 0, "a": 1, "b": 2, "ab": 3}, "merges": ["a b"]}, "ids": {"abxyab": [3, 0, 3], "xx": [0], "x": [0], "xéa": [0, 1]}},
    {"name": "byte_fallback", "model": {"type": "BPE", "dropout": null, "unk_token": "<unk>", "continuing_subword_prefix": null, "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": true, "ignore_merges": false, "vocab": {"<unk>": 0, "a": 1, "b": 2, "ab": 3, "<0x78>": 4, "<0xC3>": 5, "<0xA9>": 6}, "merges": ["a b"]}, "ids": {"abxab": [3, 4, 3], "é": [5, 6], "xzx": [4, 4, 0], "ü": [0]}},
    {"name": "ignore_merges", "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null, "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": true, "vocab": {"a": 0, "b": 1, "c": 2, "bc": 3, "abc": 4, "ab": 5}, "merges": ["b c", "a b"]}, "ids": {"abc": [4], "abcabc": [0, 3, 0, 3], "ab": [5]}},
    {"name": "no_unk", "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null, "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false, "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}, "ids": {"axb": [2], "xyz": []}}
])json";

TEST(Bpe, MergeUnkAndByteFallbackRulesMatchHf) {
  for (const nlohmann::json& entry : nlohmann::json::parse(kBpeCases)) {
    const Tokenizer tokenizer = Tokenizer::from_json(bpe_tokenizer_json(entry["model"]), "test.json");
    for (const auto& [text, ids] : entry["ids"].items()) {
      EXPECT_EQ(tokenizer.encode(text).ids, ids.get<std::vector<int32_t>>())
          << entry["name"].get<std::string>() << ": " << text;
    }
  }
}

std::string load_error(const std::string& json_text) {
  try {
    Tokenizer::from_json(json_text, "test.json");
  } catch (const TokenizerLoadError& error) {
    return error.what();
  }
  return "";
}

nlohmann::json qwen_tiny() {
  std::ifstream file(source_dir() / "tests/fixtures/qwen-tiny-tokenizer/tokenizer.json");
  return nlohmann::json::parse(file);
}

TEST(Bpe, UnsupportedOptionsAreLoadErrorsNamingThem) {
  const auto with = [](const char* pointer, nlohmann::json value) {
    nlohmann::json spec = qwen_tiny();
    spec[nlohmann::json::json_pointer(pointer)] = std::move(value);
    return load_error(spec.dump());
  };
  EXPECT_EQ(load_error(qwen_tiny().dump()), "");
  EXPECT_NE(with("/model/dropout", 0.1).find("dropout"), std::string::npos);
  EXPECT_NE(with("/model/continuing_subword_prefix", "##").find("continuing_subword_prefix"), std::string::npos);
  EXPECT_NE(with("/model/unk_token", "<nope>").find("<nope>"), std::string::npos);
  EXPECT_NE(with("/model/merges/0", "A").find("merge 'A'"), std::string::npos);
  EXPECT_NE(with("/model/merges/0", "A QQQQ").find("QQQQ"), std::string::npos);
  EXPECT_NE(with("/normalizer", {{"type", "NFKC"}}).find("normalizer type 'NFKC'"), std::string::npos);
  EXPECT_NE(with("/decoder", {{"type", "CTC"}}).find("decoder type 'CTC'"), std::string::npos);
  EXPECT_NE(with("/post_processor", {{"type", "RobertaProcessing"}}).find("RobertaProcessing"), std::string::npos);
  EXPECT_NE(with("/pre_tokenizer/pretokenizers/0/behavior", "Contiguous").find("behavior 'Contiguous'"), std::string::npos);
  EXPECT_NE(with("/pre_tokenizer/pretokenizers/0/invert", true).find("invert"), std::string::npos);
  EXPECT_NE(with("/pre_tokenizer/pretokenizers/0/pattern/Regex", "(").find("does not compile"), std::string::npos);
  EXPECT_NE(with("/pre_tokenizer/pretokenizers/1/add_prefix_space", true).find("add_prefix_space"), std::string::npos);
  nlohmann::json reversed = qwen_tiny();
  std::swap(reversed["pre_tokenizer"]["pretokenizers"][0], reversed["pre_tokenizer"]["pretokenizers"][1]);
  EXPECT_NE(load_error(reversed.dump()).find("after ByteLevel"), std::string::npos);
}

TEST(Bpe, GenericSplitPatternRunsThroughPcre2) {
  // A pattern without a fast path (GPT-2's, with ByteLevel doing the split) still tokenises: the
  // pieces are the same for plain ASCII words, so ids match the fast-path tokenizer's.
  nlohmann::json spec = qwen_tiny();
  const Tokenizer fast = Tokenizer::from_json(spec.dump(), "fast.json");
  spec["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", true}};
  const Tokenizer generic = Tokenizer::from_json(spec.dump(), "generic.json");
  const std::string text = "the quick brown fox jumps over the lazy dog";
  EXPECT_EQ(generic.encode(text).ids, fast.encode(text).ids);
  EXPECT_EQ(generic.decode(generic.encode(text).ids), text);
}

TEST(Bpe, TinyTokenizerLabelsAreSingleTokens) {
  for (const char* dir : {"tests/fixtures/qwen-tiny-tokenizer", "tests/fixtures/qwen-tiny-tokenizer/qwen3_5"}) {
    const Tokenizer tokenizer = Tokenizer::from_file(source_dir() / dir / "tokenizer.json");
    for (const std::string label : {"A", "Z", "AA", "AZ", "0", "9", "yes", "no", " yes", " no", "<|im_start|>", "<think>"}) {
      EXPECT_EQ(tokenizer.encode(label).ids.size(), 1u) << dir << ": " << label;
    }
    EXPECT_FALSE(tokenizer.special_token_ids().cls.has_value());
    EXPECT_FALSE(tokenizer.special_token_ids().unk.has_value());
  }
}

}  // namespace
}  // namespace s1::text
