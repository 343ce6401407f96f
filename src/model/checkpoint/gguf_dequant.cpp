#include "model/checkpoint/gguf_dequant.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "backend/quant_blocks.h"
#include "model/checkpoint/tensor.h"

namespace s1::checkpoint {
namespace {

// Each product and difference below is one float operation, in the order ggml and the gguf
// package's numpy reference use, so that results agree bit for bit. A product and a difference are
// separate statements: compilers may contract a*b-c within one expression into an FMA.

uint16_t load_u16(const uint8_t* at) {
  uint16_t value;
  std::memcpy(&value, at, sizeof(value));
  return value;
}

float load_half(const uint8_t* at) { return half_to_float(load_u16(at)); }

constexpr int64_t kQK = 32;  // QK4_0

void q4_0_block(const uint8_t* block, float* out) {
  const float d = load_half(block);
  const uint8_t* qs = block + 2;
  for (int64_t j = 0; j < kQK / 2; ++j) {
    out[j] = d * static_cast<float>((qs[j] & 0x0F) - 8);
    out[j + kQK / 2] = d * static_cast<float>((qs[j] >> 4) - 8);
  }
}

void q6_k_block(const uint8_t* block, float* out) {
  const uint8_t* ql = block;
  const uint8_t* qh = block + 128;
  const auto* scales = reinterpret_cast<const int8_t*>(block + 192);
  const float d = load_half(block + 208);
  // Value i of each 128-value half: low nibble from ql (byte i % 64, high nibble for i >= 64), two
  // high bits from qh (byte i % 32, bit pair i / 32); one scale per 16 values.
  for (int half = 0; half < 2; ++half) {
    for (int i = 0; i < 128; ++i) {
      const int low = (ql[64 * half + i % 64] >> (4 * (i / 64))) & 0x0F;
      const int high = (qh[32 * half + i % 32] >> (2 * (i / 32))) & 0x03;
      const int index = 128 * half + i;
      const float dl = d * static_cast<float>(scales[index / 16]);
      out[index] = dl * static_cast<float>((low | (high << 4)) - 32);
    }
  }
}

}  // namespace

void dequantize(GgmlType type, std::span<const std::byte> blocks, std::span<float> out) {
  const auto& info = ggml_type_info(type);
  const auto count = static_cast<int64_t>(out.size());
  if (count % info.block_elements != 0 ||
      blocks.size() != static_cast<std::size_t>(count / info.block_elements) * info.block_bytes) {
    throw std::invalid_argument("dequantize: " + std::to_string(blocks.size()) + " bytes of " + std::string(info.name) +
                                " do not hold " + std::to_string(count) + " values");
  }
  const auto* data = reinterpret_cast<const uint8_t*>(blocks.data());
  const int64_t block_count = count / info.block_elements;
  for (int64_t b = 0; b < block_count; ++b) {
    const uint8_t* block = data + b * static_cast<int64_t>(info.block_bytes);
    float* dst = out.data() + b * info.block_elements;
    switch (type) {
      case GgmlType::kF32:
        std::memcpy(dst, block, sizeof(float));
        break;
      case GgmlType::kF16:
        *dst = half_to_float(load_u16(block));
        break;
      case GgmlType::kBF16:
        *dst = bfloat16_to_float(load_u16(block));
        break;
      case GgmlType::kQ4_0:
        q4_0_block(block, dst);
        break;
      case GgmlType::kQ5_0:
        backend::quant::dequantize_q5_0_block(block, dst);
        break;
      case GgmlType::kQ8_0:
        backend::quant::dequantize_q8_0_block(block, dst);
        break;
      case GgmlType::kQ4_K:
        backend::quant::dequantize_q4_k_block(block, dst);
        break;
      case GgmlType::kQ5_K:
        backend::quant::dequantize_q5_k_block(block, dst);
        break;
      case GgmlType::kQ6_K:
        q6_k_block(block, dst);
        break;
    }
  }
}

std::vector<float> dequantize(const GgufTensor& tensor) {
  std::vector<float> values(static_cast<std::size_t>(tensor.element_count()));
  dequantize(tensor.type, tensor.bytes, values);
  return values;
}

}  // namespace s1::checkpoint
