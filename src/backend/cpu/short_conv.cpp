#include "backend/cpu/short_conv.h"

#include <algorithm>
#include <cassert>
#include <vector>

#include "backend/cpu/parallel.h"

namespace s1::backend::cpu {
namespace {

// Below this many multiply-adds a second thread costs more to wake than it saves.
constexpr std::size_t min_products_per_thread = 16384;

}  // namespace

void gated_short_conv(std::span<const float> bcx, std::size_t rows, std::span<const float> weight, std::size_t kernel,
                      std::span<const float> bias, std::span<float> tail, std::span<float> y) {
  assert(kernel > 0 && weight.size() % kernel == 0);
  const std::size_t channels = weight.size() / kernel;
  const std::size_t history = kernel - 1;
  assert(bias.empty() || bias.size() == channels);
  assert(tail.size() == history * channels && y.size() >= rows * channels && bcx.size() >= rows * 3 * channels);
  const std::size_t stride = 3 * channels;
  const std::size_t channel_work = std::max<std::size_t>(rows * kernel, 1);
  parallel_for(channels, (min_products_per_thread + channel_work - 1) / channel_work,
               [&](std::size_t begin, std::size_t end) {
                 // The gated inputs of this channel block, tail rows first: [history + rows, block].
                 const std::size_t block = end - begin;
                 std::vector<float> gated((history + rows) * block);
                 for (std::size_t i = 0; i < history; ++i)
                   std::copy_n(tail.data() + i * channels + begin, block, gated.data() + i * block);
                 for (std::size_t t = 0; t < rows; ++t) {
                   const float* row = bcx.data() + t * stride;
                   float* out = gated.data() + (history + t) * block;
                   for (std::size_t c = begin; c < end; ++c) out[c - begin] = row[c] * row[2 * channels + c];
                 }
                 for (std::size_t t = 0; t < rows; ++t) {
                   const float* gate = bcx.data() + t * stride + channels;
                   for (std::size_t c = begin; c < end; ++c) {
                     const float* w = weight.data() + c * kernel;
                     float sum = bias.empty() ? 0.0F : bias[c];
                     for (std::size_t j = 0; j < kernel; ++j) sum += w[j] * gated[(t + j) * block + (c - begin)];
                     y[t * channels + c] = gate[c] * sum;
                   }
                 }
                 for (std::size_t i = 0; i < history; ++i)
                   std::copy_n(gated.data() + (rows + i) * block, block, tail.data() + i * channels + begin);
               });
}

}  // namespace s1::backend::cpu
