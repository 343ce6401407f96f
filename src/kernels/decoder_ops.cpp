// Entry points of the causal-decoder ops: split rows (or query rows × heads) across the shared
// OpenMP pool and run the variant dispatch.cpp chose (RoPE: the reference) on each chunk.

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <vector>

#include "kernels/cached_attention.h"
#include "kernels/parallel.h"
#include "kernels/reference/decoder.h"
#include "kernels/rms_norm.h"
#include "kernels/rope.h"
#include "kernels/rows_to_bf16.h"
#include "kernels/swiglu.h"
#include "kernels/variants.h"
#include "kernels/x86/decoder.h"

namespace s1::kernels {
namespace {

// Below these sizes a second thread costs more to wake (tens of µs with passive OpenMP waiting)
// than it saves; the same reasoning and orders of magnitude as dispatch.cpp's thresholds.
constexpr std::size_t min_norm_elements_per_thread = 131072;
constexpr std::size_t min_elementwise_elements_per_thread = 16384;
constexpr std::size_t min_attention_products_per_thread = 65536;
// Query rows per attention work item (a multiple of the AVX-512 variant's 8-row blocks).
constexpr std::size_t rows_per_attention_item = 64;

// SiLU(a)·b of bf16 halves: widened to fp32 first (there is no bf16-input silu_mul variant).
void silu_mul_widened(std::span<const Bf16Bits> a, std::span<const Bf16Bits> b, std::span<float> y) {
  thread_local std::vector<float> widened;
  widened.resize(a.size() + b.size());
  std::transform(a.begin(), a.end(), widened.begin(), bf16_to_fp32);
  std::transform(b.begin(), b.end(), widened.begin() + static_cast<std::ptrdiff_t>(a.size()), bf16_to_fp32);
  const std::span<const float> all(widened);
  selected_variants().silu_mul.run(all.first(a.size()), all.subspan(a.size()), y);
}

}  // namespace

void rms_norm(std::span<const float> x, std::span<const float> weight, float eps, std::span<float> y) {
  const std::size_t width = weight.size();
  assert(width > 0 && x.size() % width == 0 && y.size() == x.size());
  RmsNormFn* run = selected_variants().rms_norm.run;
  parallel_for(x.size() / width, (min_norm_elements_per_thread + width - 1) / width,
               [&](std::size_t begin, std::size_t end) {
                 const std::size_t offset = begin * width;
                 const std::size_t size = (end - begin) * width;
                 run(x.subspan(offset, size), weight, eps, y.subspan(offset, size));
               });
}

void rms_norm_to_bf16(std::span<const float> x, std::span<const float> weight, float eps, std::span<Bf16Bits> y) {
  const std::size_t width = weight.size();
  assert(width > 0 && x.size() % width == 0 && y.size() == x.size());
  RmsNormFn* norm = selected_variants().rms_norm.run;
  rows_to_bf16(x.size() / width, width, min_norm_elements_per_thread, y, [&](std::size_t row, std::span<float> block) {
    norm(x.subspan(row * width, block.size()), weight, eps, block);
  });
}

void apply_rope(std::span<float> x, std::size_t rows, std::size_t row_stride, std::size_t heads, std::size_t head_dim,
                std::size_t rotary_dim, std::span<const int64_t> positions, float theta) {
  assert(rotary_dim > 0 && rotary_dim % 2 == 0 && rotary_dim <= head_dim && positions.size() == rows);
  const std::vector<float> inverse_frequencies = reference::rope_inverse_frequencies(rotary_dim, theta);
  const std::size_t row_work = std::max<std::size_t>(heads * rotary_dim, 1);
  parallel_for(rows, (min_elementwise_elements_per_thread + row_work - 1) / row_work,
               [&](std::size_t begin, std::size_t end) {
                 reference::apply_rope(x.subspan(begin * row_stride), end - begin, row_stride, heads, head_dim,
                                       inverse_frequencies, positions.subspan(begin, end - begin));
               });
}

RopeTable rope_table(std::size_t rotary_dim, float theta, std::size_t positions) {
  const std::vector<float> inverse_frequencies = reference::rope_inverse_frequencies(rotary_dim, theta);
  const std::size_t half = rotary_dim / 2;
  RopeTable table{.rotary_dim = rotary_dim,
                  .positions = positions,
                  .cosines = std::vector<float>(positions * half),
                  .sines = std::vector<float>(positions * half)};
  for (std::size_t p = 0; p < positions; ++p)
    reference::rope_angles(inverse_frequencies, static_cast<int64_t>(p),
                           std::span(table.cosines).subspan(p * half, half), std::span(table.sines).subspan(p * half, half));
  return table;
}

void silu_mul(std::span<const float> gate, std::span<const float> up, std::span<float> y) {
  assert(up.size() == gate.size() && y.size() == gate.size());
  SiluMulFn* run = selected_variants().silu_mul.run;
  parallel_for(gate.size(), min_elementwise_elements_per_thread, [&](std::size_t begin, std::size_t end) {
    run(gate.subspan(begin, end - begin), up.subspan(begin, end - begin), y.subspan(begin, end - begin));
  });
}

void swiglu(std::span<const float> x, std::size_t width, std::span<float> y) {
  assert(width > 0 && x.size() % (2 * width) == 0 && y.size() == x.size() / 2);
  SiluMulFn* run = selected_variants().silu_mul.run;
  parallel_for(y.size() / width, (min_elementwise_elements_per_thread + width - 1) / width,
               [&](std::size_t begin, std::size_t end) {
                 for (std::size_t row = begin; row < end; ++row)
                   run(x.subspan(2 * row * width, width), x.subspan((2 * row + 1) * width, width),
                       y.subspan(row * width, width));
               });
}

void swiglu_to_bf16(std::span<const float> x, std::size_t width, std::span<Bf16Bits> y) {
  gated_halves_to_bf16(x, width, min_elementwise_elements_per_thread, y, selected_variants().silu_mul.run);
}

void swiglu_to_bf16(std::span<const Bf16Bits> x, std::size_t width, std::span<Bf16Bits> y) {
  gated_halves_to_bf16(x, width, min_elementwise_elements_per_thread, y, silu_mul_widened);
}

void cached_attention(std::span<const float> q, std::size_t q_stride, std::size_t m, std::span<const float> keys,
                      std::span<const float> values, std::size_t n, std::size_t first_query_position, bool causal,
                      CachedAttentionShape shape, std::span<float> out) {
  assert(shape.heads > 0 && shape.kv_heads > 0 && shape.heads % shape.kv_heads == 0 && shape.head_dim > 0);
  const std::size_t kv_stride = shape.kv_heads * shape.head_dim;
  const std::size_t out_stride = shape.heads * shape.head_dim;
  assert(keys.size() >= n * kv_stride && values.size() >= n * kv_stride && out.size() >= m * out_stride);
  assert(m == 0 || q.size() >= (m - 1) * q_stride + out_stride);
  assert(!causal || first_query_position + m <= n);
  if (m == 0) return;
  CachedAttentionHeadFn* run = shape.precision == Precision::bf16 ? selected_variants().cached_attention_head_bf16.run
                                                                   : selected_variants().cached_attention_head.run;
  const std::size_t group = shape.heads / shape.kv_heads;
  // Items are (head, block of query rows): a long prefill spreads over threads even with few heads,
  // while each item still reuses its transposed keys for many rows.
  const std::size_t row_blocks = (m + rows_per_attention_item - 1) / rows_per_attention_item;
  const std::size_t item_work = std::max<std::size_t>(std::min(m, rows_per_attention_item) * n * shape.head_dim, 1);
  parallel_for(shape.heads * row_blocks, (min_attention_products_per_thread + item_work - 1) / item_work,
               [&](std::size_t begin, std::size_t end) {
                 for (std::size_t item = begin; item < end; ++item) {
                   const std::size_t h = item / row_blocks;
                   const std::size_t first_row = item % row_blocks * rows_per_attention_item;
                   const std::size_t rows = std::min(rows_per_attention_item, m - first_row);
                   const std::size_t kv_head = h / group;
                   run(CachedAttentionHeadTask{
                       .q = q.data() + first_row * q_stride + h * shape.head_dim,
                       .q_stride = q_stride,
                       .m = rows,
                       .keys = keys.data() + kv_head * shape.head_dim,
                       .values = values.data() + kv_head * shape.head_dim,
                       .kv_stride = kv_stride,
                       .n = n,
                       .first_query_position = first_query_position + first_row,
                       .causal = causal,
                       .head_dim = shape.head_dim,
                       .scale = shape.scale,
                       .out = out.data() + first_row * out_stride + h * shape.head_dim,
                       .out_stride = out_stride,
                   });
                 }
               });
}

void cached_attention_branches(std::span<const float> q, std::size_t q_stride, std::span<const float> prefix_keys,
                               std::span<const float> prefix_values, std::size_t prefix_length,
                               std::span<const float> keys, std::span<const float> values, std::size_t kv_stride,
                               std::span<const AttentionBranch> branches, bool causal, CachedAttentionShape shape,
                               std::span<float> out) {
  const std::size_t kv_width = shape.kv_heads * shape.head_dim;
  const std::size_t out_stride = shape.heads * shape.head_dim;
  const std::size_t d = shape.head_dim;
  assert(prefix_keys.size() >= prefix_length * kv_width && prefix_values.size() >= prefix_length * kv_width);
  const bool tiles = shape.precision == Precision::bf16 && d % 32 == 0 &&
                     selected_variants().cached_attention_head_bf16.run == &x86::cached_attention_head_amx_bf16;
  if (!tiles) {
    // [prefix rows | a branch's rows] per branch for cached_attention: the prefix part is copied
    // once, each branch overwrites only the rows after it.
    std::size_t longest = 0;
    for (const AttentionBranch& branch : branches) longest = std::max(longest, branch.length);
    std::vector<float> all_keys((prefix_length + longest) * kv_width), all_values(all_keys.size());
    std::copy_n(prefix_keys.begin(), prefix_length * kv_width, all_keys.begin());
    std::copy_n(prefix_values.begin(), prefix_length * kv_width, all_values.begin());
    for (const AttentionBranch& branch : branches) {
      for (std::size_t t = 0; t < branch.length; ++t) {
        std::copy_n(keys.data() + (branch.offset + t) * kv_stride, kv_width,
                    all_keys.data() + (prefix_length + t) * kv_width);
        std::copy_n(values.data() + (branch.offset + t) * kv_stride, kv_width,
                    all_values.data() + (prefix_length + t) * kv_width);
      }
      cached_attention(q.subspan(branch.offset * q_stride), q_stride, branch.length, all_keys, all_values,
                       prefix_length + branch.length, prefix_length, causal, shape,
                       out.subspan(branch.offset * out_stride, branch.length * out_stride));
    }
    return;
  }

  // The prefix of every kv head in tile layout, once: [kv head][keys pairs | values pairs].
  const std::size_t prefix_padded = (prefix_length + 31) / 32 * 32;
  const std::size_t head_layout = prefix_padded * d;
  // Thread-local storage of the calling thread; the pool's workers reach it through this pointer.
  thread_local std::vector<std::uint32_t> prefix_layout_storage;
  prefix_layout_storage.resize(shape.kv_heads * head_layout);
  std::uint32_t* const prefix_layout = prefix_layout_storage.data();
  parallel_for(prefix_length == 0 ? 0 : shape.kv_heads, 1, [&](std::size_t begin, std::size_t end) {
    for (std::size_t kv = begin; kv < end; ++kv) {
      std::uint32_t* layout = prefix_layout + kv * head_layout;
      x86::amx_bf16_key_value_layout(prefix_keys.data() + kv * d, prefix_values.data() + kv * d, kv_width,
                                     prefix_length, prefix_padded, d, layout, layout + head_layout / 2);
    }
  });

  // Items are (query head, branch, block of its rows), as in cached_attention.
  struct Block {
    std::size_t branch, first_row;
  };
  std::vector<Block> blocks;
  for (std::size_t b = 0; b < branches.size(); ++b)
    for (std::size_t row = 0; row < branches[b].length; row += rows_per_attention_item) blocks.push_back({b, row});
  const std::size_t group = shape.heads / shape.kv_heads;
  const std::size_t item_work =
      std::max<std::size_t>(rows_per_attention_item * (prefix_length + rows_per_attention_item) * d, 1);
  parallel_for(shape.heads * blocks.size(), (min_attention_products_per_thread + item_work - 1) / item_work,
               [&](std::size_t begin, std::size_t end) {
                 for (std::size_t item = begin; item < end; ++item) {
                   const std::size_t h = item / blocks.size();
                   const Block& block = blocks[item % blocks.size()];
                   const AttentionBranch& branch = branches[block.branch];
                   const std::size_t kv_head = h / group;
                   const std::size_t row = branch.offset + block.first_row;
                   const std::uint32_t* layout = prefix_layout + kv_head * head_layout;
                   x86::cached_attention_branch_head_amx_bf16(x86::CachedAttentionBranchHeadTask{
                       .q = q.data() + row * q_stride + h * d,
                       .q_stride = q_stride,
                       .m = std::min(rows_per_attention_item, branch.length - block.first_row),
                       .prefix_keys_pairs = layout,
                       .prefix_values_pairs = layout + head_layout / 2,
                       .prefix_length = prefix_length,
                       .prefix_padded = prefix_padded,
                       .keys = keys.data() + branch.offset * kv_stride + kv_head * d,
                       .values = values.data() + branch.offset * kv_stride + kv_head * d,
                       .kv_stride = kv_stride,
                       .first_row = block.first_row,
                       .own_count = branch.length,
                       .causal = causal,
                       .head_dim = d,
                       .scale = shape.scale,
                       .out = out.data() + row * out_stride + h * d,
                       .out_stride = out_stride,
                   });
                 }
               });
}

}  // namespace s1::kernels
