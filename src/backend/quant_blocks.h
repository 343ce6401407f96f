#pragma once
// ggml's quantised block layouts that s1serve reads and writes (Q8_0, Q4_K, Q5_K, which shares
// Q4_K's scales, and Q5_0, what llama.cpp writes for a Q4_K matrix whose rows are not whole blocks): plain scalar code, the definition the quantised matmul kernels are tested against
// and the GGUF reader's dequantising reference. Also the quantisation of activations every quantised
// matmul applies to its input rows.

#include <cstddef>
#include <cstdint>

#include "backend/backend.h"

namespace s1::backend::quant {

// Q8_0: fp16 scale d, 32 int8 q; value = q·d.
inline constexpr std::size_t q8_0_values = 32, q8_0_bytes = 34;
// Q4_K: fp16 d and dmin, 12 bytes of eight 6-bit scales and mins, 128 bytes of 4-bit q; value j of
// sub-block s (32 values) = d·scale_s·q − dmin·min_s.
inline constexpr std::size_t q4_k_values = 256, q4_k_bytes = 144;
// Q5_K: Q4_K's header, 32 bytes of fifth bits, then the low nibbles.
inline constexpr std::size_t q5_k_bytes = 176;
// Q5_0: fp16 scale d, 4 bytes of fifth bits (bit j for value j), 16 bytes of low nibbles (value j
// in byte j's low nibble, value 16 + j in its high one); value = (q − 16)·d.
inline constexpr std::size_t q5_0_values = 32, q5_0_bytes = 22;

void dequantize_q8_0_block(const std::uint8_t* block, float* out);
void dequantize_q4_k_block(const std::uint8_t* block, float* out);
void dequantize_q5_k_block(const std::uint8_t* block, float* out);
void dequantize_q5_0_block(const std::uint8_t* block, float* out);
// As ggml's quantize_row_q5_0_ref: d = the value of largest magnitude / −16.
void quantize_q5_0_block(const float* x, std::uint8_t* block);
// Sub-block j's (0..7) 6-bit scale and min from a Q4_K/Q5_K block's 12 packed bytes.
void k_scale_min(int j, const std::uint8_t* scales, std::uint8_t& scale, std::uint8_t& min);

// `values` values (a multiple of the block) of a q8_0 or q4_k row, and the same written as blocks the
// way llama.cpp's reference quantisers write them (quantize_row_q8_0_ref, quantize_row_q4_K_ref).
void dequantize_row(DType dtype, const std::byte* blocks, std::size_t values, float* out);
void quantize_row(DType dtype, const float* x, std::size_t values, std::byte* blocks);

// A quantised matmul's input rows, in blocks of 32 values: q = x/d rounded to nearest even, d =
// max|x|/127 (q = 0 when the block is all zeros). Returns d; every kernel reproduces this exactly.
inline constexpr std::size_t activation_block_values = 32;
float quantize_activation_block(const float* x, std::int8_t* q);

}  // namespace s1::backend::quant
