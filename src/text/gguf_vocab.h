#pragma once
// A tokenizer from a GGUF file's tokenizer.ggml.* metadata, built as the tokenizer.json the
// model's Hugging Face files carry and then loaded like one, so that it gives the same ids.
//
// Supported: model "gpt2" (byte-level BPE from tokens and merges) with pre-tokeniser "qwen2" or
// "qwen35" (Qwen's split patterns after NFC) or "lfm2" (llama.cpp's LLAMA3 pattern, ignore_merges,
// BOS by default, no normalisation, as llama.cpp reads it), and model "llama" (SentencePiece: BPE with byte
// fallback, merges derived from the token scores the way Transformers' SentencePiece converter
// derives them, "▁" for spaces). Anything else is a TokenizerLoadError naming it.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/tokenizer.h"

namespace s1::text {

// llama.cpp's token types (tokenizer.ggml.token_type).
enum class GgufTokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

// The tokenizer.ggml.* keys, read by the caller from the file.
struct GgufVocabulary {
  std::string model;                     // tokenizer.ggml.model
  std::string pre;                       // tokenizer.ggml.pre ("default" when absent)
  std::vector<std::string> tokens;       // tokenizer.ggml.tokens, by id
  std::vector<int32_t> token_types;      // tokenizer.ggml.token_type (empty: all normal)
  std::vector<double> scores;            // tokenizer.ggml.scores ("llama")
  std::vector<std::string> merges;       // tokenizer.ggml.merges ("gpt2"), "left right"
  std::optional<int64_t> bos_id;         // tokenizer.ggml.bos_token_id
  std::optional<int64_t> eos_id;         // tokenizer.ggml.eos_token_id
  std::optional<int64_t> unknown_id;     // tokenizer.ggml.unknown_token_id
  std::optional<int64_t> padding_id;     // tokenizer.ggml.padding_token_id
  std::optional<bool> add_bos;           // tokenizer.ggml.add_bos_token
  std::optional<bool> add_eos;           // tokenizer.ggml.add_eos_token
  std::optional<bool> add_space_prefix;  // tokenizer.ggml.add_space_prefix ("llama")
};

// The tokenizer.json text for `vocabulary`; throws TokenizerLoadError naming `source_name` and
// the key.
std::string gguf_tokenizer_json(const GgufVocabulary& vocabulary, std::string_view source_name);

Tokenizer tokenizer_from_gguf(const GgufVocabulary& vocabulary, std::string_view source_name);

// The tokenizer.ggml.pre name (model gpt2) whose split pattern is `pattern`, among those above, for a
// writer; "lfm2" only where `lfm2_family` (its pattern is Llama-3's, which other families share).
std::optional<std::string> gguf_pre_tokenizer_of_pattern(std::string_view pattern, bool lfm2_family);

}  // namespace s1::text
