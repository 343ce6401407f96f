// libFuzzer target for the GGUF reader: any bytes must give either a file whose tensor views lie
// inside the input and dequantise to their element count (and map onto our names with matching
// sizes), or a LoadError, never a crash,
// sanitizer report or runaway allocation.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "model/checkpoint/gguf.h"
#include "model/checkpoint/gguf_dequant.h"
#include "model/checkpoint/gguf_tokenizer.h"
#include "model/checkpoint/gguf_weights.h"
#include "model/checkpoint/load_error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto bytes = std::as_bytes(std::span<const uint8_t>(data, size));
  try {
    const auto file = s1::checkpoint::parse_gguf(bytes, "fuzz.gguf");
    if (file.find("tokenizer.ggml.model") != nullptr) {
      // The vocabulary keys must give a tokenizer or a load error; the tokenizer must encode.
      try {
        const auto tokenizer = s1::checkpoint::gguf_tokenizer(file);
        if (tokenizer.encode("Hello <s> w\xc3\xb6rld  \n").ids.size() > 64) std::abort();
      } catch (const s1::text::TokenizerLoadError&) {
      }
    }
    for (const auto& tensor : file.tensors) {
      if (tensor.bytes.data() < bytes.data() ||
          tensor.bytes.data() + tensor.bytes.size() > bytes.data() + bytes.size()) {
        std::abort();
      }
      // Touches every byte of the view, so ASan sees any view that escapes the input.
      if (s1::checkpoint::dequantize(tensor).size() != static_cast<size_t>(tensor.element_count())) {
        std::abort();
      }
    }
    // Our names and the converter's changes undone, on shapes and head counts from the input.
    const auto weights = s1::checkpoint::map_gguf_weights(file);
    for (const auto& tensor : weights.tensors) {
      if (tensor.element_count() * static_cast<int64_t>(s1::checkpoint::dtype_size(tensor.dtype)) !=
          static_cast<int64_t>(tensor.bytes.size())) {
        std::abort();
      }
    }
  } catch (const s1::checkpoint::LoadError&) {
    // Rejecting malformed input is the expected outcome.
  }
  return 0;
}
