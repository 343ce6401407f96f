#include <cmath>
#include <cstring>

#include "backend/cpu/reference/reference.h"
#include "backend/quant_blocks.h"

namespace s1::backend::cpu::reference {

void quantize_row(const float* x, std::size_t width, std::int8_t* q, float* scales, float* sums, std::int32_t* q_sums) {
  for (std::size_t b = 0; b < width / quantized_block_values; ++b) {
    const std::size_t at = b * quantized_block_values;
    const float d = quant::quantize_activation_block(x + at, q + at);
    int sum = 0;
    for (std::size_t j = 0; j < quantized_block_values; ++j) sum += q[at + j];
    scales[b] = d;
    sums[b] = d * static_cast<float>(sum);
    q_sums[b] = sum;
  }
}

void quantized_matmul(const QuantizedMatmulTask& task, std::size_t tile_begin, std::size_t tile_end) {
  const QuantizedLayout& layout = task.layout;
  const std::size_t blocks = layout.blocks(), out = layout.out_features;
  for (std::size_t tile = tile_begin; tile < tile_end; ++tile) {
    const std::byte* weights = task.weights + tile * layout.tile_stride();
    for (std::size_t row = 0; row < task.x.rows; ++row) {
      const std::int8_t* x = task.x.q + row * layout.in_features;
      float acc[quantized_tile_columns] = {};
      for (std::size_t b = 0; b < blocks; ++b) {
        const auto* u = reinterpret_cast<const std::uint8_t*>(weights + b * layout.block_stride());
        float s[quantized_tile_columns], m[quantized_tile_columns];
        std::memcpy(s, u + layout.weight_bytes(), sizeof(s));
        std::memcpy(m, u + layout.weight_bytes() + sizeof(s), sizeof(m));
        for (std::size_t c = 0; c < quantized_tile_columns; ++c) {
          int dot = 0;
          for (std::size_t k = 0; k < quantized_block_values; ++k) {
            const std::size_t group = k / 4, byte = k % 4;
            const int weight = layout.nibbles ? (u[((group / 2) * 16 + c) * 4 + byte] >> (4 * (group % 2))) & 0x0F
                                              : u[(group * 16 + c) * 4 + byte];
            dot += weight * x[b * quantized_block_values + k];
          }
          const float scaled = static_cast<float>(dot) * task.x.scales[row * blocks + b];
          acc[c] = std::fma(scaled, s[c], acc[c]);
          acc[c] = std::fma(-m[c], task.x.sums[row * blocks + b], acc[c]);
        }
      }
      for (std::size_t c = 0; c < quantized_tile_columns && tile * quantized_tile_columns + c < out; ++c) {
        const std::size_t n = tile * quantized_tile_columns + c;
        float value = acc[c] + (task.bias != nullptr ? task.bias[n] : 0.0F);
        if (task.y_bf16) {
          static_cast<std::uint16_t*>(task.y)[row * out + n] = float_to_bf16(value);
        } else {
          float* y = static_cast<float*>(task.y) + row * out + n;
          if (task.accumulate) value += *y;
          *y = value;
        }
      }
    }
  }
}

}  // namespace s1::backend::cpu::reference
