#include "text/gguf_vocab.h"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "text/utf8.h"

namespace s1::text {
namespace {

using Json = nlohmann::ordered_json;

// llama.cpp's pre-tokeniser names → what llama.cpp's llama_vocab::load does for each (the vendored
// llama.cpp of llama-cpp-python 0.3.36, src/llama-vocab.cpp): the Split pattern applied before
// byte-level BPE, and the settings that name sets. llama.cpp never normalises; our qwen2 and qwen35
// entries keep the NFC their models' tokenizer.json files apply (equal on NFC text).
struct PreTokenizer {
  std::string_view name;
  std::string_view pattern;
  bool nfc = false;
  // A pre-tokenised word that is itself a token is that token, merges or not (llama.cpp's
  // ignore_merges, Transformers' BPE ignore_merges).
  bool ignore_merges = false;
  // Whether BOS is added when tokenizer.ggml.add_bos_token is absent.
  bool add_bos_default = false;
};

constexpr std::array kPreTokenizers{
    PreTokenizer{
        "qwen2",
        R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
        true},
    PreTokenizer{
        "qwen35",
        R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
        true},
    // LFM2's tokenizer: llama.cpp's LLAMA3 pre-tokeniser (digits in runs of up to three), with
    // ignore_merges and BOS added by default.
    PreTokenizer{
        "lfm2",
        R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
        false, true, true},
};

class Builder {
 public:
  Builder(const GgufVocabulary& vocabulary, std::string_view source) : vocabulary_(vocabulary), source_(source) {}

  Json build() {
    const std::size_t count = vocabulary_.tokens.size();
    if (count == 0) fail("tokenizer.ggml.tokens", "is empty");
    if (!vocabulary_.token_types.empty() && vocabulary_.token_types.size() != count) {
      fail("tokenizer.ggml.token_type", "has " + std::to_string(vocabulary_.token_types.size()) + " entries for " +
                                            std::to_string(count) + " tokens");
    }
    for (const auto& [key, id] : {std::pair{"tokenizer.ggml.bos_token_id", vocabulary_.bos_id},
                                  std::pair{"tokenizer.ggml.eos_token_id", vocabulary_.eos_id},
                                  std::pair{"tokenizer.ggml.unknown_token_id", vocabulary_.unknown_id},
                                  std::pair{"tokenizer.ggml.padding_token_id", vocabulary_.padding_id}}) {
      if (id && (*id < 0 || static_cast<std::size_t>(*id) >= count)) {
        fail(key, "is " + std::to_string(*id) + ", not a token id (" + std::to_string(count) + " tokens)");
      }
    }
    for (std::size_t i = 0; i < count; ++i) {
      if (!is_valid_utf8(vocabulary_.tokens[i]))
        fail("tokenizer.ggml.tokens", "entry " + std::to_string(i) + " is not UTF-8");
    }
    if (vocabulary_.model == "gpt2") return byte_level_bpe();
    if (vocabulary_.model == "llama") return sentencepiece_bpe();
    fail("tokenizer.ggml.model", "is '" + vocabulary_.model + "'; supported: gpt2, llama");
  }

 private:
  [[noreturn]] void fail(std::string_view key, const std::string& message) const {
    throw TokenizerLoadError("tokenizer " + std::string(source_) + ": key '" + std::string(key) + "' " + message);
  }

  GgufTokenType type_of(std::size_t id) const {
    if (vocabulary_.token_types.empty()) return GgufTokenType::kNormal;
    const int32_t type = vocabulary_.token_types[id];
    if (type < 0 || type > static_cast<int32_t>(GgufTokenType::kByte)) {
      fail("tokenizer.ggml.token_type",
           "entry " + std::to_string(id) + " is " + std::to_string(type) + ", not a token type");
    }
    return static_cast<GgufTokenType>(type);
  }

  static Json added_token(std::size_t id, const std::string& content, bool special) {
    return {{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
            {"rstrip", false}, {"normalized", false}, {"special", special}};
  }

  // TemplateProcessing with the BOS/EOS the file asks for; nullopt when it adds neither.
  std::optional<Json> special_token_template(bool add_bos_default) const {
    Json single = Json::array();
    Json specials = Json::object();
    const auto add = [&](const std::optional<int64_t>& id, const char* key) {
      if (!id) fail(key, "is missing but the file asks for the token to be added");
      const std::string& token = vocabulary_.tokens[static_cast<std::size_t>(*id)];
      single.push_back({{"SpecialToken", {{"id", token}, {"type_id", 0}}}});
      specials[token] = {{"id", token}, {"ids", {*id}}, {"tokens", {token}}};
    };
    const bool add_bos = vocabulary_.add_bos.value_or(add_bos_default);
    const bool add_eos = vocabulary_.add_eos.value_or(false);
    if (!add_bos && !add_eos) return std::nullopt;
    if (add_bos) add(vocabulary_.bos_id, "tokenizer.ggml.bos_token_id");
    single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
    if (add_eos) add(vocabulary_.eos_id, "tokenizer.ggml.eos_token_id");
    return Json{{"type", "TemplateProcessing"}, {"single", single}, {"pair", nullptr}, {"special_tokens", specials}};
  }

  void insert_vocab(Json& vocab, std::size_t id) const {
    const std::string& token = vocabulary_.tokens[id];
    if (vocab.contains(token)) fail("tokenizer.ggml.tokens", "holds '" + token + "' twice");
    vocab[token] = id;
  }

  // Qwen's layout (the one tools/reference/gguf_vocab_to_tokenizer_json.py rebuilds): control
  // tokens are special added tokens, user-defined ones plain added tokens, llama.cpp's unused
  // [PAD…] fillers are left out, everything else is the BPE vocabulary.
  Json byte_level_bpe() const {
    const auto pre = std::find_if(kPreTokenizers.begin(), kPreTokenizers.end(),
                                  [&](const PreTokenizer& entry) { return entry.name == vocabulary_.pre; });
    if (pre == kPreTokenizers.end()) {
      fail("tokenizer.ggml.pre", "is '" + vocabulary_.pre + "'; supported with model gpt2: qwen2, qwen35, lfm2");
    }
    Json vocab = Json::object();
    Json added = Json::array();
    for (std::size_t id = 0; id < vocabulary_.tokens.size(); ++id) {
      const GgufTokenType type = type_of(id);
      if (type == GgufTokenType::kControl || type == GgufTokenType::kUserDefined) {
        added.push_back(added_token(id, vocabulary_.tokens[id], type == GgufTokenType::kControl));
      } else if (type != GgufTokenType::kUnused) {
        insert_vocab(vocab, id);
      }
    }
    Json merges = Json::array();
    for (const std::string& merge : vocabulary_.merges) {
      if (!is_valid_utf8(merge)) fail("tokenizer.ggml.merges", "holds an entry that is not UTF-8");
      const auto space = merge.find(' ');
      if (space == std::string::npos || space == 0 || space + 1 == merge.size() ||
          merge.find(' ', space + 1) != std::string::npos) {
        fail("tokenizer.ggml.merges", "entry '" + merge + "' is not two tokens separated by one space");
      }
      merges.push_back({merge.substr(0, space), merge.substr(space + 1)});
    }
    const Json byte_level = {
        {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
    Json root = base(std::move(added));
    root["normalizer"] = pre->nfc ? Json{{"type", "NFC"}} : Json(nullptr);
    root["pre_tokenizer"] = {{"type", "Sequence"},
                             {"pretokenizers",
                              {{{"type", "Split"},
                                {"pattern", {{"Regex", std::string(pre->pattern)}}},
                                {"behavior", "Isolated"},
                                {"invert", false}},
                               byte_level}}};
    root["post_processor"] = special_token_template(pre->add_bos_default).value_or(byte_level);
    root["decoder"] = byte_level;
    root["model"] = bpe_model(std::move(vocab), std::move(merges), nullptr, false, pre->ignore_merges);
    return root;
  }

  // Transformers' layout for a SentencePiece BPE model (LlamaTokenizer): "▁" for spaces prepended
  // once (Metaspace, prepend_scheme "first"), BPE with byte fallback over the whole vocabulary,
  // control, unknown and user-defined tokens also added tokens. Merges as Transformers'
  // generate_merges derives them from the vocabulary: every split of a token into two tokens,
  // ordered by the merged token's id (SentencePiece numbers BPE pieces by score), then by the
  // length of the left part.
  Json sentencepiece_bpe() const {
    if (vocabulary_.pre != "default") {
      fail("tokenizer.ggml.pre", "is '" + vocabulary_.pre + "'; model llama supports only 'default'");
    }
    Json vocab = Json::object();
    Json added = Json::array();
    std::unordered_map<std::string_view, std::size_t> ids;
    for (std::size_t id = 0; id < vocabulary_.tokens.size(); ++id) {
      insert_vocab(vocab, id);
      ids.emplace(vocabulary_.tokens[id], id);
      const GgufTokenType type = type_of(id);
      if (type == GgufTokenType::kControl || type == GgufTokenType::kUnknown || type == GgufTokenType::kUserDefined) {
        added.push_back(added_token(id, vocabulary_.tokens[id], type != GgufTokenType::kUserDefined));
      }
    }
    Json merges = Json::array();
    for (const std::string& token : vocabulary_.tokens) {
      // Splits at code-point boundaries, left part growing: the order generate_merges gives.
      for (std::size_t at = 1; at < token.size(); ++at) {
        if ((static_cast<unsigned char>(token[at]) & 0xC0) == 0x80) continue;
        const std::string_view whole(token);
        if (ids.contains(whole.substr(0, at)) && ids.contains(whole.substr(at))) {
          merges.push_back({token.substr(0, at), token.substr(at)});
        }
      }
    }
    const bool prefix = vocabulary_.add_space_prefix.value_or(true);
    Json root = base(std::move(added));
    root["normalizer"] = nullptr;
    root["pre_tokenizer"] = {{"type", "Metaspace"},
                             {"replacement", "\u2581"},
                             {"prepend_scheme", prefix ? "first" : "never"},
                             {"split", false}};
    root["post_processor"] = special_token_template(true).value_or(nullptr);
    Json decoders = {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                     {{"type", "ByteFallback"}},
                     {{"type", "Fuse"}}};
    if (prefix) decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    root["decoder"] = {{"type", "Sequence"}, {"decoders", std::move(decoders)}};
    Json unk = nullptr;
    if (vocabulary_.unknown_id) unk = vocabulary_.tokens[static_cast<std::size_t>(*vocabulary_.unknown_id)];
    root["model"] = bpe_model(std::move(vocab), std::move(merges), std::move(unk), true, false);
    return root;
  }

  // SentencePiece vocabularies fall back to bytes and fuse unknowns; byte-level ones need neither.
  static Json bpe_model(Json vocab, Json merges, Json unk, bool sentencepiece, bool ignore_merges) {
    return {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", std::move(unk)},
            {"continuing_subword_prefix", nullptr},
            {"end_of_word_suffix", nullptr},
            {"fuse_unk", sentencepiece},
            {"byte_fallback", sentencepiece},
            {"ignore_merges", ignore_merges},
            {"vocab", std::move(vocab)},
            {"merges", std::move(merges)}};
  }

  static Json base(Json added) {
    return {{"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr}, {"added_tokens", std::move(added)}};
  }

  const GgufVocabulary& vocabulary_;
  std::string_view source_;
};

}  // namespace

std::string gguf_tokenizer_json(const GgufVocabulary& vocabulary, std::string_view source_name) {
  return Builder(vocabulary, source_name).build().dump();
}

std::optional<std::string> gguf_pre_tokenizer_of_pattern(std::string_view pattern, bool lfm2_family) {
  for (const PreTokenizer& entry : kPreTokenizers) {
    if (entry.pattern == pattern && (entry.name != "lfm2" || lfm2_family)) return std::string(entry.name);
  }
  return std::nullopt;
}

Tokenizer tokenizer_from_gguf(const GgufVocabulary& vocabulary, std::string_view source_name) {
  return Tokenizer::from_json(gguf_tokenizer_json(vocabulary, source_name), source_name);
}

}  // namespace s1::text
