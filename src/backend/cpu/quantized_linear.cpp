#include "backend/cpu/quantized_linear.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "backend/cpu/team.h"
#include "backend/cpu/variants.h"
#include "backend/quant_blocks.h"

namespace s1::backend::cpu {
namespace {

// Below this many multiply-accumulates the product runs on the calling thread (as PackedLinear's
// bf16 limit: about 50 µs of work, less than waking a second thread costs).
constexpr std::size_t max_serial_macs = 24'000'000;

// Column c of a tile, block b: the unsigned bytes and the scale and min (quantized_layout.h).
void pack_q8_0(const std::uint8_t* block, std::uint8_t* weights, std::size_t c, float& s, float& m) {
  s = f16_to_float(static_cast<std::uint16_t>(block[0] | (block[1] << 8)));
  m = 128.0F * s;
  for (std::size_t k = 0; k < quantized_block_values; ++k)
    weights[((k / 4) * 16 + c) * 4 + k % 4] = static_cast<std::uint8_t>(block[2 + k] ^ 0x80U);
}

// Sub-block j (32 values) of a Q4_K block.
void pack_q4_k(const std::uint8_t* block, std::size_t j, std::uint8_t* weights, std::size_t c, float& s, float& m) {
  std::uint8_t scale = 0, min = 0;
  quant::k_scale_min(static_cast<int>(j), block + 4, scale, min);
  // The products the dequantising reference forms, so w = s·q − m is its value exactly.
  s = f16_to_float(static_cast<std::uint16_t>(block[0] | (block[1] << 8))) * static_cast<float>(scale);
  m = f16_to_float(static_cast<std::uint16_t>(block[2] | (block[3] << 8))) * static_cast<float>(min);
  const std::uint8_t* qs = block + 16 + 32 * (j / 2);
  const int shift = 4 * static_cast<int>(j % 2);
  for (std::size_t k = 0; k < quantized_block_values; ++k) {
    const auto q = static_cast<std::uint8_t>((qs[k] >> shift) & 0x0F);
    const std::size_t group = k / 4;
    weights[((group / 2) * 16 + c) * 4 + k % 4] |= static_cast<std::uint8_t>(q << (4 * (group % 2)));
  }
}

std::vector<std::int8_t>& quantized_rows() {
  thread_local std::vector<std::int8_t> rows;
  return rows;
}
std::vector<float>& row_scales() {
  thread_local std::vector<float> scales;
  return scales;
}
std::vector<std::int32_t>& row_sums() {
  thread_local std::vector<std::int32_t> sums;
  return sums;
}

}  // namespace

void QuantizedMatrix::FreeDeleter::operator()(std::byte* data) const { std::free(data); }

QuantizedMatrix::QuantizedMatrix(DType dtype, std::span<const std::byte> blocks, std::span<const float> bias,
                                 std::size_t in_features, std::size_t out_features)
    : layout_{.nibbles = dtype == DType::q4_k, .in_features = in_features, .out_features = out_features} {
  if (!quantized(dtype) || in_features == 0 || out_features == 0 || in_features % block_values(dtype) != 0 ||
      blocks.size() != out_features * storage_bytes(dtype, in_features) ||
      (!bias.empty() && bias.size() != out_features))
    throw std::invalid_argument("quantised matmul: " + std::to_string(out_features) + "×" +
                                std::to_string(in_features) + " " + std::string(dtype_name(dtype)) +
                                " weights in whole blocks, and out_features bias values or none");
  constexpr std::size_t alignment = 64;
  const std::size_t bytes = (layout_.bytes() + alignment - 1) / alignment * alignment;
  void* data = std::aligned_alloc(alignment, bytes);
  if (data == nullptr) throw std::bad_alloc();
  std::memset(data, 0, bytes);
  packed_.reset(static_cast<std::byte*>(data));
  bias_.assign(bias.begin(), bias.end());
  const std::size_t row_bytes = storage_bytes(dtype, in_features);
  const auto* source = reinterpret_cast<const std::uint8_t*>(blocks.data());
  for (std::size_t n = 0; n < out_features; ++n) {
    const std::size_t tile = n / quantized_tile_columns, c = n % quantized_tile_columns;
    for (std::size_t b = 0; b < layout_.blocks(); ++b) {
      std::byte* block = packed_.get() + tile * layout_.tile_stride() + b * layout_.block_stride();
      auto* weights = reinterpret_cast<std::uint8_t*>(block);
      float* scales = reinterpret_cast<float*>(block + layout_.weight_bytes());
      const std::uint8_t* row = source + n * row_bytes;
      if (layout_.nibbles) {
        pack_q4_k(row + (b / 8) * quant::q4_k_bytes, b % 8, weights, c, scales[c], scales[quantized_tile_columns + c]);
      } else {
        pack_q8_0(row + b * quant::q8_0_bytes, weights, c, scales[c], scales[quantized_tile_columns + c]);
      }
    }
  }
}

QuantizedMatrix::~QuantizedMatrix() = default;

void QuantizedMatrix::run(const void* x, bool x_bf16, std::size_t rows, void* y, bool y_bf16, bool accumulate) const {
  const std::size_t in = layout_.in_features, blocks = layout_.blocks();
  std::vector<std::int8_t>& q = quantized_rows();
  std::vector<float>& scales = row_scales();
  std::vector<std::int32_t>& q_sums = row_sums();
  q.resize(rows * in);
  scales.resize(2 * rows * blocks);
  q_sums.resize(rows * blocks);
  const SelectedVariants& selected = selected_variants();
  QuantizeRowFn* quantize = selected.quantize_row.run;
  QuantizedMatmulFn* multiply = selected.quantized_matmul.run;
  const QuantizedMatmulTask task{.layout = layout_,
                                 .weights = packed_.get(),
                                 .x = {.q = q.data(),
                                       .scales = scales.data(),
                                       .sums = scales.data() + rows * blocks,
                                       .q_sums = q_sums.data(),
                                       .rows = rows},
                                 .bias = bias_.empty() ? nullptr : bias_.data(),
                                 .accumulate = accumulate,
                                 .y = y,
                                 .y_bf16 = y_bf16};
  const auto quantize_rows = [&](std::size_t begin, std::size_t end) {
    std::vector<float> widened(x_bf16 ? in : 0);
    for (std::size_t r = begin; r < end; ++r) {
      const float* row = static_cast<const float*>(x) + r * in;
      if (x_bf16) {
        const auto* source = static_cast<const std::uint16_t*>(x) + r * in;
        std::transform(source, source + in, widened.begin(), bf16_to_float);
        row = widened.data();
      }
      quantize(row, in, q.data() + r * in, scales.data() + r * blocks, scales.data() + (rows + r) * blocks,
               q_sums.data() + r * blocks);
    }
  };
  const std::size_t tiles = layout_.tiles();
  if (omp_in_parallel() != 0 || rows * in * layout_.out_features <= max_serial_macs) {
    quantize_rows(0, rows);
    multiply(task, 0, tiles);
    return;
  }
  // Each thread quantises its share of the rows, then multiplies all of them by its share of the
  // tiles (in pairs, the variants' register tile): it streams only its own part of the weights.
  run_team([&](Team& team) {
    const Team::Range mine = team.share(rows);
    quantize_rows(mine.begin, mine.end);
    team.barrier();
    const Team::Range pairs = team.share((tiles + 1) / 2);
    multiply(task, 2 * pairs.begin, std::min(tiles, 2 * pairs.end));
  });
}

}  // namespace s1::backend::cpu
