// Entry points of the Gated DeltaNet ops: split channels, rows or value heads across the shared
// OpenMP pool and run the selected variant on each piece.

#include "backend/cpu/gated_delta.h"

#include <algorithm>
#include <cassert>
#include <vector>

#include "backend/cpu/parallel.h"
#include "backend/cpu/rows_to_bf16.h"
#include "backend/cpu/variants.h"

namespace s1::backend::cpu {
namespace {

// Below these sizes a second thread costs more to wake than it saves (as in decoder_ops.cpp).
constexpr std::size_t min_elements_per_thread = 16384;
constexpr std::size_t min_delta_products_per_thread = 65536;

}  // namespace

void causal_conv1d_silu(std::span<const float> x, std::size_t rows, std::size_t x_stride,
                        std::span<const float> weight, std::size_t kernel, std::span<float> tail,
                        std::span<float> y) {
  assert(kernel > 0 && weight.size() % kernel == 0);
  const std::size_t channels = weight.size() / kernel;
  const std::size_t channel_work = std::max<std::size_t>(rows * kernel, 1);
  CausalConv1dSiluFn* run = selected_variants().causal_conv1d_silu.run;
  parallel_for(channels, (min_elements_per_thread + channel_work - 1) / channel_work,
               [&](std::size_t begin, std::size_t end) {
                 run(x, rows, x_stride, weight, kernel, tail, y, begin, end);
               });
}

void l2_norm_scaled(std::span<const float> x, std::size_t dim, float eps, float scale, std::span<float> y) {
  assert(dim > 0 && x.size() % dim == 0 && y.size() == x.size());
  parallel_for(x.size() / dim, (min_elements_per_thread + dim - 1) / dim, [&](std::size_t begin, std::size_t end) {
    selected_variants().l2_norm_scaled.run(x.subspan(begin * dim, (end - begin) * dim), dim, eps, scale,
                                           y.subspan(begin * dim, (end - begin) * dim));
  });
}

void gated_rms_norm(std::span<const float> x, std::span<const float> gate, std::span<const float> weight, float eps,
                    std::span<float> y) {
  const std::size_t width = weight.size();
  assert(width > 0 && x.size() % width == 0 && gate.size() == x.size() && y.size() == x.size());
  parallel_for(x.size() / width, (min_elements_per_thread + width - 1) / width,
               [&](std::size_t begin, std::size_t end) {
                 const std::size_t offset = begin * width;
                 const std::size_t size = (end - begin) * width;
                 selected_variants().gated_rms_norm.run(x.subspan(offset, size), gate.subspan(offset, size), weight,
                                                        eps, y.subspan(offset, size));
               });
}

void gated_rms_norm_to_bf16(std::span<const float> x, std::span<const float> gate, std::span<const float> weight,
                            float eps, std::span<Bf16Bits> y) {
  const std::size_t width = weight.size();
  assert(width > 0 && x.size() % width == 0 && gate.size() == x.size() && y.size() == x.size());
  GatedRmsNormFn* norm = selected_variants().gated_rms_norm.run;
  rows_to_bf16(x.size() / width, width, min_elements_per_thread, y, [&](std::size_t row, std::span<float> block) {
    const std::size_t offset = row * width;
    norm(x.subspan(offset, block.size()), gate.subspan(offset, block.size()), weight, eps, block);
  });
}

void gated_delta_rule(const GatedDeltaInputs& inputs, GatedDeltaShape shape, std::size_t first_position,
                      std::size_t chunk_size, std::span<float> state, std::span<float> out) {
  gated_delta_rule(inputs, shape, first_position, chunk_size, state, state, out);
}

void gated_delta_rule(const GatedDeltaInputs& inputs, GatedDeltaShape shape, std::size_t first_position,
                      std::size_t chunk_size, std::span<const float> initial, std::span<float> state,
                      std::span<float> out) {
  assert(shape.k_heads > 0 && shape.v_heads % shape.k_heads == 0 && chunk_size > 0);
  const std::size_t head_size = shape.k_dim * shape.v_dim;
  assert(state.size() == shape.v_heads * head_size && out.size() >= inputs.rows * shape.v_heads * shape.v_dim);
  assert(initial.empty() || initial.size() == state.size());
  const std::size_t head_work = std::max<std::size_t>(inputs.rows * head_size, 1);
  GatedDeltaHeadFn* run = selected_variants().gated_delta_head.run;
  parallel_for(shape.v_heads, (min_delta_products_per_thread + head_work - 1) / head_work,
               [&](std::size_t begin, std::size_t end) {
                 for (std::size_t h = begin; h < end; ++h) {
                   const std::span<float> head = state.subspan(h * head_size, head_size);
                   if (initial.empty()) {
                     std::fill(head.begin(), head.end(), 0.0F);
                   } else if (initial.data() != state.data()) {
                     const std::span<const float> from = initial.subspan(h * head_size, head_size);
                     std::copy(from.begin(), from.end(), head.begin());
                   }
                   run(inputs, shape, h, first_position, chunk_size, head, out);
                 }
               });
}

}  // namespace s1::backend::cpu
