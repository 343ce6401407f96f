#pragma once
// The quantised matmul variants (backend/cpu/quantized_layout.h), each compiled with its own ISA
// flags and chosen by dispatch.cpp from CPUID.

#include <cstddef>
#include <cstdint>

#include "backend/cpu/quantized_layout.h"

namespace s1::backend::cpu::x86 {

void quantized_matmul_avx512_vnni(const QuantizedMatmulTask& task, std::size_t tile_begin, std::size_t tile_end);
void quantized_matmul_avx_vnni(const QuantizedMatmulTask& task, std::size_t tile_begin, std::size_t tile_end);
void quantized_matmul_avx2(const QuantizedMatmulTask& task, std::size_t tile_begin, std::size_t tile_end);
// AMX-INT8 tiles (TDPBSUD) per 32-value block, scaled on AVX-512 (Sapphire Rapids and later).
void quantized_matmul_amx_int8(const QuantizedMatmulTask& task, std::size_t tile_begin, std::size_t tile_end);
void quantize_row_avx512(const float* x, std::size_t width, std::int8_t* q, float* scales, float* sums,
                         std::int32_t* q_sums);

}  // namespace s1::backend::cpu::x86
