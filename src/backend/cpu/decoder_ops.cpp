// Entry points of the causal-decoder ops: split rows (or query rows × heads) across the shared
// OpenMP pool and run the variant dispatch.cpp chose (RoPE: the reference) on each chunk.

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <vector>

#include "backend/cpu/cached_attention.h"
#include "backend/cpu/parallel.h"
#include "backend/cpu/reference/decoder.h"
#include "backend/cpu/rms_norm.h"
#include "backend/cpu/rope.h"
#include "backend/cpu/rows_to_bf16.h"
#include "backend/cpu/swiglu.h"
#include "backend/cpu/team.h"
#include "backend/cpu/variants.h"
#include "backend/cpu/x86/decoder.h"

namespace s1::backend::cpu {
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

void apply_mrope(std::span<float> x, std::size_t rows, std::size_t row_stride, std::size_t heads,
                 std::size_t head_dim, std::size_t rotary_dim, std::span<const uint8_t> axes,
                 std::span<const int64_t> positions, float theta) {
  assert(rotary_dim > 0 && rotary_dim % 2 == 0 && rotary_dim <= head_dim && positions.size() == 3 * rows &&
         axes.size() == rotary_dim / 2);
  const std::vector<float> inverse_frequencies = reference::rope_inverse_frequencies(rotary_dim, theta);
  const std::size_t row_work = std::max<std::size_t>(heads * rotary_dim, 1);
  parallel_for(rows, (min_elementwise_elements_per_thread + row_work - 1) / row_work,
               [&](std::size_t begin, std::size_t end) {
                 // A share of rows reads its own slice of each axis's positions.
                 const std::size_t count = end - begin;
                 std::vector<int64_t> share(3 * count);
                 for (std::size_t axis = 0; axis < 3; ++axis)
                   std::copy_n(positions.begin() + static_cast<std::ptrdiff_t>(axis * rows + begin), count,
                               share.begin() + static_cast<std::ptrdiff_t>(axis * count));
                 reference::apply_mrope(x.subspan(begin * row_stride), count, row_stride, heads, head_dim,
                                        inverse_frequencies, axes, share);
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

void apply_rope(std::span<float> x, std::size_t rows, std::size_t row_stride, std::size_t heads, std::size_t head_dim,
                const RopeTable& table, std::span<const int64_t> positions) {
  assert(table.rotary_dim <= head_dim && positions.size() == rows);
  reference::apply_rope(x, rows, row_stride, heads, head_dim, table.rotary_dim / 2, table.cosines, table.sines,
                        positions);
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
  const std::size_t kv_stride = shape.kv_width();
  const std::size_t out_stride = shape.q_width();
  assert(keys.size() >= n * kv_stride && values.size() >= n * kv_stride && out.size() >= m * out_stride);
  assert(m == 0 || q.size() >= (m - 1) * q_stride + out_stride);
  assert(!causal || first_query_position + m <= n);
  if (m == 0) return;
  CachedAttentionHeadFn* run = shape.precision == Precision::bf16 ? selected_variants().cached_attention_head_bf16.run
                                                                   : selected_variants().cached_attention_head.run;
  const std::size_t group = shape.group();
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

namespace {

// Where cached_attention_branches writes: fp32 rows, or the same rounded to bf16.
struct AttentionOutput {
  float* fp32 = nullptr;
  Bf16Bits* bf16 = nullptr;
};

// One head task of a fp32-output kernel, its rows stored at `offset` of out in either form (bf16
// through a block of this thread's: the kernel's rows, then rounded).
void run_head(CachedAttentionHeadFn* run, CachedAttentionHeadTask task, AttentionOutput out, std::size_t offset) {
  if (out.bf16 == nullptr) {
    task.out = out.fp32 + offset;
    run(task);
    return;
  }
  thread_local std::vector<float> rows;
  const std::size_t d = task.head_dim;
  const std::size_t stride = task.out_stride;
  rows.resize(task.m * d);
  task.out = rows.data();
  task.out_stride = d;
  run(task);
  ConvertFp32ToBf16Fn* convert = selected_variants().convert_fp32_to_bf16.run;
  for (std::size_t i = 0; i < task.m; ++i)
    convert(std::span<const float>(rows).subspan(i * d, d), std::span(out.bf16 + offset + i * stride, d));
}

// Blocks of query rows of every branch: the row dimension of the work items.
struct RowBlock {
  std::size_t branch, first_row;
};

std::vector<RowBlock> row_blocks(std::span<const AttentionBranch> branches) {
  std::vector<RowBlock> blocks;
  for (std::size_t b = 0; b < branches.size(); ++b)
    for (std::size_t row = 0; row < branches[b].length; row += rows_per_attention_item) blocks.push_back({b, row});
  return blocks;
}

// Off the tiles (fp32, or head sizes and CPUs without them): the per-head kernels read one
// contiguous key block per branch, so with a prefix each branch's [prefix rows | its rows] is
// assembled in the workspace in turn (the prefix part once); without one they read the branch's
// rows in place.
void attend_per_head(Team& team, CachedAttentionWorkspace& workspace, const CachedAttentionBranches& a,
                     AttentionOutput out) {
  const CachedAttentionShape& shape = a.shape;
  const std::size_t d = shape.head_dim;
  const std::size_t kv_width = shape.kv_width();
  const std::size_t out_stride = shape.q_width();
  const std::size_t group = shape.group();
  CachedAttentionHeadFn* run = shape.precision == Precision::bf16 ? selected_variants().cached_attention_head_bf16.run
                                                                   : selected_variants().cached_attention_head.run;
  // Items (query head, block of rows) of branch_count branches from first_branch; in_place: keys and
  // values are the branches' own rows (kv_stride apart), else one [prefix | branch] block.
  const auto attend_items = [&](std::size_t first_branch, std::size_t branch_count, const float* keys,
                                const float* values, std::size_t kv_stride, bool in_place) {
    std::vector<RowBlock> blocks = row_blocks(a.branches.subspan(first_branch, branch_count));
    const Team::Range mine = team.share(shape.heads * blocks.size());
    for (std::size_t item = mine.begin; item < mine.end; ++item) {
      const std::size_t h = item / blocks.size();
      const RowBlock& block = blocks[item % blocks.size()];
      const AttentionBranch& branch = a.branches[first_branch + block.branch];
      const std::size_t row = branch.offset + block.first_row;
      const std::size_t kv_offset = (in_place ? branch.offset * kv_stride : 0) + h / group * d;
      run_head(run,
               CachedAttentionHeadTask{
                   .q = a.q.data() + row * a.q_stride + h * d,
                   .q_stride = a.q_stride,
                   .m = std::min(rows_per_attention_item, branch.length - block.first_row),
                   .keys = keys + kv_offset,
                   .values = values + kv_offset,
                   .kv_stride = kv_stride,
                   .n = a.prefix_length + branch.length,
                   .first_query_position = a.prefix_length + block.first_row,
                   .causal = a.causal,
                   .head_dim = d,
                   .scale = shape.scale,
                   .out = nullptr,
                   .out_stride = out_stride,
               },
               out, row * out_stride + h * d);
    }
  };
  if (a.prefix_length == 0) {
    team.barrier();
    attend_items(0, a.branches.size(), a.keys.data(), a.values.data(), a.kv_stride, true);
    team.barrier();
    return;
  }
  std::size_t longest = 0;
  for (const AttentionBranch& branch : a.branches) longest = std::max(longest, branch.length);
  if (team.index() == 0) {
    workspace.keys.resize((a.prefix_length + longest) * kv_width);
    workspace.values.resize(workspace.keys.size());
  }
  team.barrier();
  float* const keys = workspace.keys.data();
  float* const values = workspace.values.data();
  const Team::Range prefix_rows = team.share(a.prefix_length);
  std::copy(a.prefix_keys.begin() + static_cast<std::ptrdiff_t>(prefix_rows.begin * kv_width),
            a.prefix_keys.begin() + static_cast<std::ptrdiff_t>(prefix_rows.end * kv_width), keys + prefix_rows.begin * kv_width);
  std::copy(a.prefix_values.begin() + static_cast<std::ptrdiff_t>(prefix_rows.begin * kv_width),
            a.prefix_values.begin() + static_cast<std::ptrdiff_t>(prefix_rows.end * kv_width),
            values + prefix_rows.begin * kv_width);
  for (std::size_t b = 0; b < a.branches.size(); ++b) {
    const AttentionBranch& branch = a.branches[b];
    const Team::Range own_rows = team.share(branch.length);
    for (std::size_t t = own_rows.begin; t < own_rows.end; ++t) {
      std::copy_n(a.keys.data() + (branch.offset + t) * a.kv_stride, kv_width, keys + (a.prefix_length + t) * kv_width);
      std::copy_n(a.values.data() + (branch.offset + t) * a.kv_stride, kv_width,
                  values + (a.prefix_length + t) * kv_width);
    }
    team.barrier();
    attend_items(b, 1, keys, values, kv_width, false);
    team.barrier();  // the next branch overwrites the rows after the prefix
  }
}

// On AMX tiles: every kv head's prefix and each branch's own keys and values laid out once, shared
// by all the query heads of the group and all row blocks (a causal prefill's blocks would otherwise
// lay out the keys before them again, and each query head of a group again).
void attend_on_tiles(Team& team, CachedAttentionWorkspace& workspace, const CachedAttentionBranches& a,
                     AttentionOutput out) {
  const CachedAttentionShape& shape = a.shape;
  const std::size_t d = shape.head_dim;
  const std::size_t kv_width = shape.kv_width();
  const std::size_t out_stride = shape.q_width();
  const std::size_t group = shape.group();
  const auto padded = [](std::size_t count) { return (count + 31) / 32 * 32; };
  // Per kv head, [prefix | branch 0 | branch 1 | …], each part's keys pairs then values pairs
  // (`columns` padded keys · d values in all).
  const std::size_t prefix_padded = padded(a.prefix_length);
  std::vector<std::size_t> own_first(a.branches.size());  // column of each branch's first key
  std::size_t columns = prefix_padded;
  for (std::size_t b = 0; b < a.branches.size(); ++b) {
    own_first[b] = columns;
    columns += padded(a.branches[b].length);
  }
  if (team.index() == 0) workspace.tiles.resize(shape.kv_heads * columns * d);
  team.barrier();
  std::uint32_t* const tiles = workspace.tiles.data();
  const auto part = [&](std::size_t kv, std::size_t first_column) { return tiles + (kv * columns + first_column) * d; };

  const std::size_t parts = a.branches.size() + 1;  // the prefix, then each branch
  const Team::Range layouts = team.share(shape.kv_heads * parts);
  for (std::size_t item = layouts.begin; item < layouts.end; ++item) {
    const std::size_t kv = item / parts;
    if (item % parts == 0) {
      if (a.prefix_length == 0) continue;
      std::uint32_t* layout = part(kv, 0);
      x86::amx_bf16_key_value_layout(a.prefix_keys.data() + kv * d, a.prefix_values.data() + kv * d, kv_width,
                                     a.prefix_length, prefix_padded, d, layout, layout + prefix_padded * d / 2);
      continue;
    }
    const std::size_t b = item % parts - 1;
    const AttentionBranch& branch = a.branches[b];
    const std::size_t own_padded = padded(branch.length);
    std::uint32_t* layout = part(kv, own_first[b]);
    x86::amx_bf16_key_value_layout(a.keys.data() + branch.offset * a.kv_stride + kv * d,
                                   a.values.data() + branch.offset * a.kv_stride + kv * d, a.kv_stride, branch.length,
                                   own_padded, d, layout, layout + own_padded * d / 2);
  }
  team.barrier();

  const std::vector<RowBlock> blocks = row_blocks(a.branches);
  const Team::Range mine = team.share(shape.heads * blocks.size());
  for (std::size_t item = mine.begin; item < mine.end; ++item) {
    const std::size_t h = item / blocks.size();
    const RowBlock& block = blocks[item % blocks.size()];
    const AttentionBranch& branch = a.branches[block.branch];
    const std::size_t kv = h / group;
    const std::size_t row = branch.offset + block.first_row;
    const std::size_t own_padded = padded(branch.length);
    const std::uint32_t* prefix = part(kv, 0);
    const std::uint32_t* own = part(kv, own_first[block.branch]);
    const std::size_t offset = row * out_stride + h * d;
    x86::cached_attention_branch_head_amx_bf16(x86::CachedAttentionBranchHeadTask{
        .q = a.q.data() + row * a.q_stride + h * d,
        .q_stride = a.q_stride,
        .m = std::min(rows_per_attention_item, branch.length - block.first_row),
        .prefix_keys_pairs = prefix,
        .prefix_values_pairs = prefix + prefix_padded * d / 2,
        .prefix_length = a.prefix_length,
        .prefix_padded = prefix_padded,
        .own_keys_pairs = own,
        .own_values_pairs = own + own_padded * d / 2,
        .own_padded = own_padded,
        .first_row = block.first_row,
        .own_count = branch.length,
        .causal = a.causal,
        .head_dim = d,
        .scale = shape.scale,
        .out = out.bf16 == nullptr ? out.fp32 + offset : nullptr,
        .out_bf16 = out.bf16 == nullptr ? nullptr : out.bf16 + offset,
        .out_stride = out_stride,
    });
  }
  team.barrier();
}

void attend_branches(Team& team, CachedAttentionWorkspace& workspace, const CachedAttentionBranches& a,
                     AttentionOutput out) {
  const CachedAttentionShape& shape = a.shape;
  assert(shape.heads > 0 && shape.kv_heads > 0 && shape.heads % shape.kv_heads == 0 && shape.head_dim > 0);
  [[maybe_unused]] const std::size_t kv_width = shape.kv_width();
  assert(a.prefix_keys.size() >= a.prefix_length * kv_width && a.prefix_values.size() >= a.prefix_length * kv_width);
  const bool tiles = shape.precision == Precision::bf16 && shape.head_dim % 32 == 0 &&
                     selected_variants().cached_attention_head_bf16.run == &x86::cached_attention_head_amx_bf16;
  if (tiles) {
    attend_on_tiles(team, workspace, a, out);
  } else {
    attend_per_head(team, workspace, a, out);
  }
}

// The forms without a team: a region of their own, on one thread when the work is too small to be
// worth waking another.
void attend_branches_alone(const CachedAttentionBranches& a, AttentionOutput out) {
  std::size_t products = 0;
  for (const AttentionBranch& branch : a.branches)
    products += branch.length * (a.prefix_length + branch.length) * a.shape.head_dim * a.shape.heads;
  const auto threads = static_cast<int>(
      std::clamp<std::size_t>(products / min_attention_products_per_thread, 1, static_cast<std::size_t>(thread_count())));
  thread_local CachedAttentionWorkspace workspace;
  CachedAttentionWorkspace& shared = workspace;  // the calling thread's, reached by the team's threads
  run_team([&](Team& team) { attend_branches(team, shared, a, out); }, threads);
}

}  // namespace

void cached_attention_branches(std::span<const float> q, std::size_t q_stride, std::span<const float> prefix_keys,
                               std::span<const float> prefix_values, std::size_t prefix_length,
                               std::span<const float> keys, std::span<const float> values, std::size_t kv_stride,
                               std::span<const AttentionBranch> branches, bool causal, CachedAttentionShape shape,
                               std::span<float> out) {
  attend_branches_alone({.q = q,
                         .q_stride = q_stride,
                         .prefix_keys = prefix_keys,
                         .prefix_values = prefix_values,
                         .prefix_length = prefix_length,
                         .keys = keys,
                         .values = values,
                         .kv_stride = kv_stride,
                         .branches = branches,
                         .causal = causal,
                         .shape = shape},
                        {.fp32 = out.data()});
}

void cached_attention_branches(const CachedAttentionBranches& attention, std::span<Bf16Bits> out) {
  attend_branches_alone(attention, {.bf16 = out.data()});
}

void cached_attention_branches(Team& team, CachedAttentionWorkspace& workspace,
                               const CachedAttentionBranches& attention, std::span<float> out) {
  attend_branches(team, workspace, attention, {.fp32 = out.data()});
}

void cached_attention_branches(Team& team, CachedAttentionWorkspace& workspace,
                               const CachedAttentionBranches& attention, std::span<Bf16Bits> out) {
  attend_branches(team, workspace, attention, {.bf16 = out.data()});
}

}  // namespace s1::backend::cpu
