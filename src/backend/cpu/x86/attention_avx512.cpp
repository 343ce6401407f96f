#include <algorithm>
#include <cassert>
#include <limits>
#include <vector>

#include "backend/cpu/reference/reference.h"
#include "backend/cpu/x86/attention_avx512_blocks.h"
#include "backend/cpu/x86/avx512_math.h"
#include "backend/cpu/x86/x86.h"

namespace s1::backend::cpu::x86 {
namespace {

using namespace avx512_attention;

struct Scratch {
  std::vector<float> keys_transposed;  // [head_dim][padded length]
  std::vector<float> key_rows;         // [16][head_dim] 16 keys after RoPE
  std::vector<float> queries;          // [block_rows][head_dim], pre-scaled
  std::vector<float> scores;           // [block_rows][padded length]
  std::vector<float> rotated;          // [head_dim] one query or key after RoPE
  std::vector<float> out_block;        // [block_rows][head_dim] rows bound for task.out_bf16
};

Scratch& thread_scratch() {
  thread_local Scratch scratch;
  return scratch;
}

}  // namespace

void attention_head_avx512(const AttentionHeadTask& bf16_or_fp32_task) {
  // bf16 inputs reach this variant only where AMX is missing: widening them first is enough there.
  thread_local std::vector<float> widened_rows;
  const AttentionHeadTask task = reference::widen_bf16_inputs(bf16_or_fp32_task, widened_rows);
  assert(task.length <= task.seq && task.head_dim > 0);
  const std::size_t d = task.head_dim;
  const std::size_t length = task.length;
  const std::size_t padded = (length + 15) / 16 * 16;
  Scratch& scratch = thread_scratch();
  scratch.keys_transposed.resize(d * padded);
  scratch.queries.resize(block_rows * d);
  scratch.scores.resize(block_rows * padded);
  float* keys_transposed = scratch.keys_transposed.data();
  float* scores = scratch.scores.data();

  // Row t of q or k, rotated into scratch.rotated when RoPE is fused.
  scratch.rotated.resize(d);
  const std::size_t half = d / 2;
  const auto head_row = [&](const float* x, std::size_t t) {
    if (task.rope_cosines == nullptr) return x + t * task.qkv_stride;
    rotate_half_row(x + t * task.qkv_stride, d, task.rope_cosines + t * half, task.rope_sines + t * half,
                    scratch.rotated.data());
    return static_cast<const float*>(scratch.rotated.data());
  };
  // Kᵀ, 16 keys × 16 channels per dword transpose in registers (a scalar store per value was a fifth
  // of the kernel); the transpose writes the padding keys of the last block as zeros. Rotated keys go
  // to 16 rows first.
  scratch.key_rows.resize(16 * d);
  for (std::size_t j0 = 0; j0 < length; j0 += 16) {
    const std::size_t valid = std::min<std::size_t>(16, length - j0);
    const float* rows = task.k + j0 * task.qkv_stride;
    std::size_t row_stride = task.qkv_stride;
    if (task.rope_cosines != nullptr) {
      for (std::size_t r = 0; r < valid; ++r) std::copy_n(head_row(task.k, j0 + r), d, scratch.key_rows.data() + r * d);
      rows = scratch.key_rows.data();
      row_stride = d;
    }
    std::size_t c = 0;
    for (; c + 16 <= d; c += 16)
      transpose_dwords_16x16(reinterpret_cast<const std::uint8_t*>(rows + c), row_stride * sizeof(float), 0, valid,
                             reinterpret_cast<std::uint32_t*>(keys_transposed + c * padded + j0), padded);
    for (; c < d; ++c)
      for (std::size_t r = 0; r < 16; ++r)
        keys_transposed[c * padded + j0 + r] = r < valid ? rows[r * row_stride + c] : 0.0F;
  }

  const std::size_t query_stop = std::min(task.query_stop(), length);
  if (task.out_bf16 != nullptr) scratch.out_block.resize(block_rows * d);
  for (std::size_t i0 = task.query_begin; i0 < query_stop; i0 += block_rows) {
    const std::size_t rows = std::min(block_rows, query_stop - i0);
    std::fill(scratch.queries.begin(), scratch.queries.end(), 0.0F);
    const __m512 scale = _mm512_set1_ps(task.scale);
    for (std::size_t r = 0; r < rows; ++r) {
      const float* q = head_row(task.q, i0 + r);
      for (std::size_t c = 0; c < d; c += 16) {
        const __mmask16 lanes = first_lanes(d - c);
        _mm512_mask_storeu_ps(scratch.queries.data() + r * d + c, lanes,
                              _mm512_mul_ps(_mm512_maskz_loadu_ps(lanes, q + c), scale));
      }
    }

    // Keys this block can see, [begin, end), widened to whole vectors (padding keys are zero, then
    // masked); a sliding window narrows both ends.
    const auto [begin, end] = task.block_keys(i0, rows, 16);
    const std::size_t end_padded = (end + 15) / 16 * 16;
    score_blocks(scratch.queries.data(), keys_transposed, padded, d, begin, end_padded, scores);

    float inverse_sum[block_rows] = {};
    float* out_rows[block_rows] = {};
    for (std::size_t r = 0; r < block_rows; ++r) {
      float* row_scores = scores + r * padded;
      if (r >= rows) {
        std::fill(row_scores + begin, row_scores + end_padded, 0.0F);
        continue;
      }
      const std::size_t i = i0 + r;
      const auto [first, visible] = task.visible_keys(i);
      // Keys left of this row's window take no part in the maximum; their (clamped, ~1e-38)
      // exponentials are zeroed before the weighted sum.
      std::fill(row_scores + begin, row_scores + first, -std::numeric_limits<float>::infinity());
      inverse_sum[r] = softmax_numerators(row_scores + begin, visible - begin, end_padded - begin);
      std::fill(row_scores + begin, row_scores + first, 0.0F);
      out_rows[r] = task.out_bf16 != nullptr ? scratch.out_block.data() + r * d : task.out + i * task.out_stride;
    }
    for (std::size_t c0 = 0; c0 < d; c0 += 32)
      weighted_values(scores, padded, begin, end, task.v, task.qkv_stride, d, c0, inverse_sum, out_rows);
    // Only where AMX is missing (the AMX variant serves bf16 otherwise): the portable rounding is enough.
    if (task.out_bf16 != nullptr) {
      for (std::size_t r = 0; r < rows; ++r)
        reference::convert_fp32_to_bf16(std::span(scratch.out_block.data() + r * d, d),
                                        std::span(task.out_bf16 + (i0 + r) * task.out_stride, d));
    }
  }
  task.zero_rows_past_length();
}

}  // namespace s1::backend::cpu::x86
