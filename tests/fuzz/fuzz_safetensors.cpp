// libFuzzer target for the safetensors header parser: any bytes must give either tensor views that
// lie inside the input or a LoadError, never a crash, sanitizer report or runaway allocation.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "model/checkpoint/load_error.h"
#include "model/checkpoint/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto bytes = std::as_bytes(std::span<const uint8_t>(data, size));
  try {
    const auto contents = s1::checkpoint::parse_safetensors(bytes, "fuzz.safetensors");
    for (const auto& tensor : contents.tensors) {
      if (tensor.bytes.data() < bytes.data() ||
          tensor.bytes.data() + tensor.bytes.size() > bytes.data() + bytes.size() ||
          tensor.element_count() * static_cast<int64_t>(s1::checkpoint::dtype_size(tensor.dtype)) !=
              static_cast<int64_t>(tensor.bytes.size())) {
        std::abort();
      }
      const auto dtype = tensor.dtype;
      if (dtype == s1::checkpoint::DType::kF32 || dtype == s1::checkpoint::DType::kF16 ||
          dtype == s1::checkpoint::DType::kBF16) {
        // Touches every byte of the view, so ASan sees any view that escapes the input.
        if (s1::checkpoint::to_float(tensor).size() != static_cast<size_t>(tensor.element_count())) {
          std::abort();
        }
      }
    }
  } catch (const s1::checkpoint::LoadError&) {
    // Rejecting malformed input is the expected outcome.
  }
  return 0;
}
