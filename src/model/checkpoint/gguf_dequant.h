#pragma once
// The dequantising reference for the ggml tensor types s1serve reads: plain scalar code that
// follows ggml's block layouts, the ground truth quantised kernels are checked against.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "model/checkpoint/gguf.h"

namespace s1::checkpoint {

// Decodes `out.size()` values of `type` from `blocks`; out.size() must be a multiple of the
// type's block size and blocks must hold exactly the blocks for it (std::invalid_argument if not).
void dequantize(GgmlType type, std::span<const std::byte> blocks, std::span<float> out);

// The whole tensor as floats, in ggml order (row-major under GgufTensor::shape()).
std::vector<float> dequantize(const GgufTensor& tensor);

}  // namespace s1::checkpoint
