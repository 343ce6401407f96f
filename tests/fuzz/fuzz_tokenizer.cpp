// libFuzzer target: encodes arbitrary bytes with the committed all-MiniLM-L6-v2 tokenizer (WordPiece)
// and the tiny Qwen tokenizer (byte-level BPE), and decodes the BPE ids back.
// The tokenizer.json files are found through S1SERVE_SOURCE_DIR, else the compile-time
// S1SERVE_SOURCE_DIR definition if the build sets one, else by walking up from the binary.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string_view>

#include "text/tokenizer.h"

namespace {

constexpr std::string_view kWordPiecePath = "tests/parity/text/minilm/tokenizer.json";
constexpr std::string_view kBpePath = "tests/fixtures/qwen-tiny-tokenizer/tokenizer.json";

std::filesystem::path find_source_file(std::string_view relative) {
  if (const char* dir = std::getenv("S1SERVE_SOURCE_DIR")) return std::filesystem::path(dir) / relative;
#ifdef S1SERVE_SOURCE_DIR
  return std::filesystem::path(S1SERVE_SOURCE_DIR) / relative;
#else
  std::error_code error;
  for (auto dir = std::filesystem::read_symlink("/proc/self/exe", error).parent_path(); !error && !dir.empty();
       dir = dir.parent_path()) {
    if (std::filesystem::exists(dir / relative)) return dir / relative;
    if (dir == dir.parent_path()) break;
  }
  std::abort();  // no tokenizer to fuzz: set S1SERVE_SOURCE_DIR
#endif
}

const s1::text::Tokenizer& tokenizer() {
  static const s1::text::Tokenizer instance = s1::text::Tokenizer::from_file(find_source_file(kWordPiecePath));
  return instance;
}

const s1::text::Tokenizer& bpe_tokenizer() {
  static const s1::text::Tokenizer instance = s1::text::Tokenizer::from_file(find_source_file(kBpePath));
  return instance;
}

bool is_printable_ascii(std::string_view text) {
  for (const char c : text) {
    if (c < 0x20 || c > 0x7E) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const s1::text::Tokenizer& instance = tokenizer();
  // The first byte also picks the options, so truncation and the special-free path are covered.
  const size_t max_length = size > 0 ? data[0] % 40 : 0;
  const bool add_special_tokens = size == 0 || (data[0] & 0x80) == 0;
  const s1::text::Encoding encoding = instance.encode(text, {.add_special_tokens = add_special_tokens, .max_length = max_length});
  for (const int32_t id : encoding.ids) {
    if (id < 0 || static_cast<size_t>(id) >= instance.vocab_size()) std::abort();
  }
  if (max_length >= 2 && encoding.ids.size() > max_length) std::abort();
  (void)instance.token_to_id(text);

  const s1::text::Tokenizer& bpe = bpe_tokenizer();
  const s1::text::Encoding bpe_encoding = bpe.encode(text, {.add_special_tokens = add_special_tokens, .max_length = max_length});
  for (const int32_t id : bpe_encoding.ids) {
    if (id < 0 || static_cast<size_t>(id) >= bpe.vocab_size()) std::abort();
  }
  // Byte-level BPE loses nothing: printable ASCII (unchanged by NFC) decodes back to itself.
  if (max_length == 0 && is_printable_ascii(text) && bpe.decode(bpe_encoding.ids) != text) std::abort();
  (void)bpe.decode(bpe_encoding.ids, true);
  return 0;
}
