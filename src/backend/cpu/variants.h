#pragma once

// The variant functions behind each op, for the dispatch table and the consistency test. Model code
// calls the op headers (layer_norm.h, …), never these directly.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "backend/cpu/convert.h"
#include "backend/cpu/gated_delta.h"
#include "backend/cpu/quantized_layout.h"

namespace s1::backend::cpu {

enum class Isa { portable, avx2, avx_vnni, avx512, avx512_vnni, avx512_bf16, amx_bf16, amx_int8 };

[[nodiscard]] bool isa_supported(Isa isa);
[[nodiscard]] std::string_view isa_name(Isa isa);

// Variants are serial: the dispatching op splits rows (or heads) across threads itself.

// residual may be empty (plain LayerNorm); rows = x.size() / gamma.size().
using LayerNormFn = void(std::span<const float> x, std::span<const float> residual, std::span<const float> gamma,
                         std::span<const float> beta, float eps, std::span<float> y);
using GeluFn = void(std::span<const float> x, std::span<float> y);
using GeluMulFn = void(std::span<const float> x, std::span<const float> gate, std::span<float> y);
// gelu_mul over bf16 operands (a bf16 matmul's output), widened exactly to fp32 as they are read.
using GeluMulBf16Fn = void(std::span<const Bf16Bits> x, std::span<const Bf16Bits> gate, std::span<float> y);
using SoftmaxFn = void(std::span<const float> x, std::size_t columns, std::span<float> y);
using ConvertFp32ToBf16Fn = void(std::span<const float> x, std::span<Bf16Bits> y);
// rows = x.size() / weight.size() (backend/cpu/rms_norm.h).
using RmsNormFn = void(std::span<const float> x, std::span<const float> weight, float eps, std::span<float> y);
using SiluMulFn = void(std::span<const float> gate, std::span<const float> up, std::span<float> y);

// One (sequence, head) of attention over strided rows of the fused QKV matrix.
struct AttentionHeadTask {
  const float* q = nullptr;  // row t of this head's queries at q + t·qkv_stride
  const float* k = nullptr;
  const float* v = nullptr;
  std::size_t qkv_stride = 0;
  float* out = nullptr;  // row t at out + t·out_stride, head_dim values
  std::size_t out_stride = 0;
  std::size_t seq = 0;     // rows to write
  std::size_t length = 0;  // valid tokens (≤ seq); rows beyond are zeroed
  std::size_t head_dim = 0;
  bool causal = false;
  float scale = 1.0F;
  // 0: no window. Otherwise query i sees only keys j with |i − j| ≤ window (ModernBERT's local
  // layers: a bidirectional sliding window), on top of the causal and length limits.
  std::size_t window = 0;
  // When set, rotate-half RoPE over the whole head is applied to q and k as they are read (instead of
  // a pass of its own over the QKV rows): row t is at position t and rotates by
  // rope_cosines/rope_sines [t·head_dim/2, (t+1)·head_dim/2), a backend::cpu::RopeTable's layout.
  const float* rope_cosines = nullptr;
  const float* rope_sines = nullptr;
  // Query rows computed and written: [query_begin, query_stop()), a thread's share of the sequence's
  // queries (backend::cpu::Team); every query still sees all of its visible keys.
  std::size_t query_begin = 0;
  std::size_t query_end = static_cast<std::size_t>(-1);
  // When set, output rows are written here rounded to bf16 (the next bf16 matmul's input, no
  // conversion pass) instead of to out, with the same stride.
  Bf16Bits* out_bf16 = nullptr;
  // When set (all three), queries, keys and values are read from these bf16 rows (same qkv_stride)
  // instead of q, k and v: a fused projection written in bf16, half the bytes to read.
  const Bf16Bits* q_bf16 = nullptr;
  const Bf16Bits* k_bf16 = nullptr;
  const Bf16Bits* v_bf16 = nullptr;
  // When set (with q_bf16): this head's keys and values already laid out for the AMX kernel
  // (backend::cpu::StagedKeyValues), read instead of k_bf16 and v_bf16. Only the amx_bf16 variant takes
  // them (StagedKeyValues::available).
  const std::uint32_t* staged_keys_values = nullptr;

  [[nodiscard]] std::size_t query_stop() const { return std::min(query_end, seq); }

  // The keys query row i (< length) attends to, [first, end): the causal, length and window limits.
  struct KeyRange {
    std::size_t first, end;
  };
  [[nodiscard]] KeyRange visible_keys(std::size_t i) const {
    std::size_t end = causal ? i + 1 : length;
    if (window == 0) return {0, end};
    return {i > window ? i - window : 0, std::min(end, i + window + 1)};
  }
  // The keys any query row of [i0, i0 + rows) (< length) attends to, first rounded down to a multiple of
  // `align` (a kernel's key block): the union of their visible_keys.
  [[nodiscard]] KeyRange block_keys(std::size_t i0, std::size_t rows, std::size_t align) const {
    std::size_t end = causal ? std::min(length, i0 + rows) : length;
    if (window == 0) return {0, end};
    return {(i0 > window ? i0 - window : 0) / align * align, std::min(end, i0 + rows + window)};
  }
  // Writes zeros to the output rows [max(length, query_begin), query_stop()): the padding past the
  // valid tokens, in out or out_bf16.
  void zero_rows_past_length() const {
    for (std::size_t i = std::max(length, query_begin); i < query_stop(); ++i) {
      if (out_bf16 != nullptr) {
        std::fill_n(out_bf16 + i * out_stride, head_dim, Bf16Bits{0});
      } else {
        std::fill_n(out + i * out_stride, head_dim, 0.0F);
      }
    }
  }
};
using AttentionHeadFn = void(const AttentionHeadTask& task);

// One query head of a decoder's cached attention (backend/cpu/cached_attention.h): m query rows at
// absolute positions first_query_position… against n cached key/value rows of one sequence.
struct CachedAttentionHeadTask {
  const float* q = nullptr;  // query row i at q + i·q_stride, head_dim values
  std::size_t q_stride = 0;
  std::size_t m = 0;
  const float* keys = nullptr;    // key row j at keys + j·kv_stride
  const float* values = nullptr;  // value row j at values + j·kv_stride
  std::size_t kv_stride = 0;
  std::size_t n = 0;
  std::size_t first_query_position = 0;
  bool causal = true;  // row i sees keys 0..first_query_position + i, else all n
  std::size_t head_dim = 0;
  float scale = 1.0F;
  float* out = nullptr;  // row i at out + i·out_stride, head_dim values
  std::size_t out_stride = 0;
};
using CachedAttentionHeadFn = void(const CachedAttentionHeadTask& task);

// Value head `head` of backend::cpu::gated_delta_rule; head_state: [k_dim, v_dim] of that head.
using GatedDeltaHeadFn = void(const GatedDeltaInputs& inputs, GatedDeltaShape shape, std::size_t head,
                              std::size_t first_position, std::size_t chunk_size, std::span<float> head_state,
                              std::span<float> out);
// Whole rows of backend::cpu::l2_norm_scaled and backend::cpu::gated_rms_norm (the entry points split rows).
using L2NormScaledFn = void(std::span<const float> x, std::size_t dim, float eps, float scale, std::span<float> y);
using GatedRmsNormFn = void(std::span<const float> x, std::span<const float> gate, std::span<const float> weight,
                            float eps, std::span<float> y);
// Channels [channel_begin, channel_end) of backend::cpu::causal_conv1d_silu.
using CausalConv1dSiluFn = void(std::span<const float> x, std::size_t rows, std::size_t x_stride,
                                std::span<const float> weight, std::size_t kernel, std::span<float> tail,
                                std::span<float> y, std::size_t channel_begin, std::size_t channel_end);

// Output tiles [tile_begin, tile_end) of a quantised matmul, every row (quantized_layout.h).
using QuantizedMatmulFn = void(const QuantizedMatmulTask& task, std::size_t tile_begin, std::size_t tile_end);
// One row of `width` values (a multiple of 32) quantised as quant::quantize_activation_block does,
// exactly: q, and per block d, d·Σq and Σq.
using QuantizeRowFn = void(const float* x, std::size_t width, std::int8_t* q, float* scales, float* sums,
                           std::int32_t* q_sums);

template <class Fn>
struct Variant {
  std::string_view name;
  Isa isa;
  Fn* run;
  bool bf16_arithmetic = false;  // rounds operands to bf16: chosen only for Precision::bf16
};

// Every compiled variant of each op, best first; the portable reference is always last.
struct OpVariants {
  std::span<const Variant<LayerNormFn>> layer_norm;
  std::span<const Variant<GeluFn>> gelu;
  std::span<const Variant<GeluMulFn>> gelu_mul;
  std::span<const Variant<SoftmaxFn>> softmax;
  std::span<const Variant<ConvertFp32ToBf16Fn>> convert_fp32_to_bf16;
  std::span<const Variant<AttentionHeadFn>> attention_head;
  std::span<const Variant<CachedAttentionHeadFn>> cached_attention_head;
  std::span<const Variant<RmsNormFn>> rms_norm;
  std::span<const Variant<SiluMulFn>> silu_mul;
  std::span<const Variant<GatedDeltaHeadFn>> gated_delta_head;
  std::span<const Variant<CausalConv1dSiluFn>> causal_conv1d_silu;
  std::span<const Variant<L2NormScaledFn>> l2_norm_scaled;
  std::span<const Variant<GatedRmsNormFn>> gated_rms_norm;
  std::span<const Variant<GeluMulBf16Fn>> gelu_mul_bf16;
  std::span<const Variant<QuantizedMatmulFn>> quantized_matmul;
  std::span<const Variant<QuantizeRowFn>> quantize_row;
};
[[nodiscard]] const OpVariants& op_variants();

// The variant each op runs on this CPU (chosen once, the first supported in op_variants()).
struct SelectedVariants {
  Variant<LayerNormFn> layer_norm;
  Variant<GeluFn> gelu;
  Variant<GeluMulFn> gelu_mul;
  Variant<SoftmaxFn> softmax;
  Variant<ConvertFp32ToBf16Fn> convert_fp32_to_bf16;
  Variant<AttentionHeadFn> attention_head;
  Variant<AttentionHeadFn> attention_head_bf16;
  Variant<CachedAttentionHeadFn> cached_attention_head;
  Variant<CachedAttentionHeadFn> cached_attention_head_bf16;
  Variant<RmsNormFn> rms_norm;
  Variant<SiluMulFn> silu_mul;
  Variant<GatedDeltaHeadFn> gated_delta_head;
  Variant<CausalConv1dSiluFn> causal_conv1d_silu;
  Variant<L2NormScaledFn> l2_norm_scaled;
  Variant<GatedRmsNormFn> gated_rms_norm;
  Variant<GeluMulBf16Fn> gelu_mul_bf16;
  Variant<QuantizedMatmulFn> quantized_matmul;
  Variant<QuantizeRowFn> quantize_row;
};
[[nodiscard]] const SelectedVariants& selected_variants();

}  // namespace s1::backend::cpu
