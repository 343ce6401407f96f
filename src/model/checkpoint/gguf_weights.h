#pragma once
// A GGUF file's tensors under the names, shapes and values our safetensors loaders expect: each
// GGUF name mapped through the architecture's table (gguf_names.h), what the converter changed
// undone; Q8_0 and Q4_K matrices kept as they are in the file (quantised matmuls read them), other
// quantised types and any tensor whose values loading changes dequantised to F32.

#include <vector>

#include "model/checkpoint/gguf.h"
#include "model/checkpoint/tensor.h"

namespace s1::checkpoint {

struct GgufWeights {
  // F32, F16, BF16, Q8_0 and Q4_K tensors that need no value change point into the file; the rest into
  // `owned`, whose buffers do not move when the vectors do.
  std::vector<TensorView> tensors;
  std::vector<std::vector<float>> owned;
};

// Throws LoadError naming the file and tensor for an architecture s1serve does not map, a tensor
// its table does not hold, or a shape the converter could not have written.
GgufWeights map_gguf_weights(const GgufFile& file);

}  // namespace s1::checkpoint
