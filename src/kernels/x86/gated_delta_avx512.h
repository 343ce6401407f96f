#pragma once

// AVX-512 variant of the gated delta rule (kernels/gated_delta.h); dispatch.cpp chooses it from CPUID.

#include <cstddef>
#include <span>

#include "kernels/gated_delta.h"

namespace s1::kernels::x86 {

// Same contract as reference::gated_delta_rule_head, with the chunk's products in fp32 FMA.
void gated_delta_rule_head_avx512(const GatedDeltaInputs& inputs, GatedDeltaShape shape, std::size_t head,
                                  std::size_t first_position, std::size_t chunk_size, std::span<float> head_state,
                                  std::span<float> out);

}  // namespace s1::kernels::x86
