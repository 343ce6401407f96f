#pragma once
// Tokenizer loaded from a HF tokenizer.json, producing the same ids as HF `tokenizers`.
//
// Supported today: models WordPiece and BPE (byte-level or not, byte_fallback, unk, ignore_merges;
// no dropout); normalizers BertNormalizer, NFC, Replace (String or Regex), Prepend, Sequence;
// pre_tokenizers BertPreTokenizer, Split (Isolated, Removed, MergedWithPrevious, MergedWithNext;
// regex via PCRE2, with a hand-written matcher for the Qwen patterns), ByteLevel (no prefix space),
// Metaspace (prepend_scheme always/first/never, split; first stage of a Sequence only), Sequence;
// post_processors TemplateProcessing / BertProcessing (single sequence), ByteLevel; decoders
// ByteLevel, WordPiece, Replace, ByteFallback, Fuse, Strip, Metaspace, Sequence; added_tokens —
// enough for BERT/MiniLM, Qwen and the Gemma-style SentencePiece-BPE files (mmBERT, Vela 2.0). Any
// other component type or option is a load error naming it. The file's own truncation/padding sections are
// reported but not applied: the caller chooses max_length per call, as sentence-transformers does.
// Encoding accepts any bytes: invalid UTF-8 is read as Python's decode(errors="replace") would.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace s1::text {

// A missing, malformed or unsupported tokenizer.json; the message names the file and the problem.
class TokenizerLoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct EncodeOptions {
  bool add_special_tokens = true;
  // Total length including special tokens; 0 means no truncation. Content is cut from the end.
  size_t max_length = 0;
};

struct Encoding {
  std::vector<int32_t> ids;
  bool truncated = false;
};

struct SpecialTokenIds {
  std::optional<int32_t> cls;
  std::optional<int32_t> sep;
  std::optional<int32_t> pad;
  std::optional<int32_t> unk;
  std::optional<int32_t> mask;
};

// The tokenizer.json "truncation" and "padding" sections, for callers that want the file defaults.
struct FileTruncation {
  size_t max_length = 0;
};
struct FilePadding {
  std::optional<size_t> fixed_length;  // strategy {"Fixed": n}; empty for BatchLongest
  int32_t pad_id = 0;
  std::string pad_token;
};

class Tokenizer {
 public:
  static Tokenizer from_file(const std::filesystem::path& path);
  // source_name only labels error messages.
  static Tokenizer from_json(std::string_view json_text, std::string_view source_name);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  Encoding encode(std::string_view text, EncodeOptions options = {}) const;
  // HF's decode: the tokens of known ids through the file's decoder (joined by spaces when it has
  // none), invalid UTF-8 in the result replaced as Rust's from_utf8_lossy does.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  // Empty for an id no token has.
  std::string_view id_to_token(int32_t id) const;
  size_t vocab_size() const;
  const SpecialTokenIds& special_token_ids() const;
  const std::optional<FileTruncation>& file_truncation() const;
  const std::optional<FilePadding>& file_padding() const;

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<const Impl> impl);

  std::unique_ptr<const Impl> impl_;
};

}  // namespace s1::text
