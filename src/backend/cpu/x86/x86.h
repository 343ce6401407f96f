#pragma once

// Optimised x86 variants. Each is compiled with its own ISA flags and may run only where
// isa_supported() says so; dispatch.cpp makes that choice.

#include <cstddef>
#include <cstdint>
#include <span>

#include "backend/cpu/variants.h"

namespace s1::backend::cpu::x86 {

void layer_norm_avx512(std::span<const float> x, std::span<const float> residual,
                       std::span<const float> gamma, std::span<const float> beta, float eps,
                       std::span<float> y);
void gelu_avx512(std::span<const float> x, std::span<float> y);
void gelu_mul_avx512(std::span<const float> x, std::span<const float> gate, std::span<float> y);
void gelu_mul_bf16_avx512(std::span<const Bf16Bits> x, std::span<const Bf16Bits> gate, std::span<float> y);
void softmax_avx512(std::span<const float> x, std::size_t columns, std::span<float> y);
void convert_fp32_to_bf16_avx512_bf16(std::span<const float> x, std::span<Bf16Bits> y);
void attention_head_avx512(const AttentionHeadTask& task);
// bf16 products on AMX tiles; hands head_dim not a multiple of 32 to attention_head_avx512.
void attention_head_amx_bf16(const AttentionHeadTask& task);
// Dwords of one head's keys and values of a sequence of `length` laid out for attention_head_amx_bf16
// (AttentionHeadTask::staged_keys_values).
std::size_t staged_head_size_amx_bf16(std::size_t length, std::size_t head_dim);
// Lays out keys and values [first, last) of one head (bf16 rows `stride` values apart, head_dim a
// multiple of 32) into `staged` (staged_head_size_amx_bf16 dwords); the range ending at `length` also
// writes the padding. Ranges of one head may be staged by different threads at once.
void stage_keys_values_amx_bf16(const Bf16Bits* k, const Bf16Bits* v, std::size_t stride, std::size_t length,
                                std::size_t head_dim, std::size_t first, std::size_t last, std::uint32_t* staged);

}  // namespace s1::backend::cpu::x86
