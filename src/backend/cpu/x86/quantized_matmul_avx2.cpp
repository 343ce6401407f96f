#include "backend/cpu/x86/quantized_matmul_avx2.h"

namespace s1::backend::cpu::x86 {

void quantized_matmul_avx2(const QuantizedMatmulTask& task, std::size_t tile_begin, std::size_t tile_end) {
  avx2::quantized_matmul<false>(task, tile_begin, tile_end);
}

}  // namespace s1::backend::cpu::x86
