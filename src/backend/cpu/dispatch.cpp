// The one dispatch table: which variant each op runs on this CPU, and the op entry points that
// split work across the shared OpenMP pool before calling it.

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <vector>

#include "backend/cpu/attention.h"
#include "backend/cpu/convert.h"
#include "backend/cpu/cpu_features.h"
#include "backend/cpu/gelu.h"
#include "backend/cpu/layer_norm.h"
#include "backend/cpu/parallel.h"
#include "backend/cpu/pooling.h"
#include "backend/cpu/reference/decoder.h"
#include "backend/cpu/reference/gated_delta.h"
#include "backend/cpu/reference/reference.h"
#include "backend/cpu/rows_to_bf16.h"
#include "backend/cpu/softmax.h"
#include "backend/cpu/variants.h"
#include "backend/cpu/x86/avx2.h"
#include "backend/cpu/x86/decoder.h"
#include "backend/cpu/x86/gated_delta_avx512.h"
#include "backend/cpu/x86/quantized_matmul.h"
#include "backend/cpu/x86/x86.h"

namespace s1::backend::cpu {
namespace {

constexpr std::array<Variant<LayerNormFn>, 3> layer_norm_variants{{
    {"avx512", Isa::avx512, &x86::layer_norm_avx512},
    {"avx2", Isa::avx2, &x86::layer_norm_avx2},
    {"reference", Isa::portable, &reference::layer_norm},
}};
constexpr std::array<Variant<GeluFn>, 3> gelu_variants{{
    {"avx512", Isa::avx512, &x86::gelu_avx512},
    {"avx2", Isa::avx2, &x86::gelu_avx2},
    {"reference", Isa::portable, &reference::gelu},
}};
constexpr std::array<Variant<SoftmaxFn>, 3> softmax_variants{{
    {"avx512", Isa::avx512, &x86::softmax_avx512},
    {"avx2", Isa::avx2, &x86::softmax_avx2},
    {"reference", Isa::portable, &reference::softmax},
}};
constexpr std::array<Variant<ConvertFp32ToBf16Fn>, 2> convert_variants{{
    {"avx512_bf16", Isa::avx512_bf16, &x86::convert_fp32_to_bf16_avx512_bf16},
    {"reference", Isa::portable, &reference::convert_fp32_to_bf16},
}};
constexpr std::array<Variant<AttentionHeadFn>, 4> attention_head_variants{{
    {"amx_bf16", Isa::amx_bf16, &x86::attention_head_amx_bf16, true},
    {"avx512", Isa::avx512, &x86::attention_head_avx512},
    {"avx2", Isa::avx2, &x86::attention_head_avx2},
    {"reference", Isa::portable, &reference::attention_head},
}};
constexpr std::array<Variant<CachedAttentionHeadFn>, 4> cached_attention_head_variants{{
    {"amx_bf16", Isa::amx_bf16, &x86::cached_attention_head_amx_bf16, true},
    {"avx512", Isa::avx512, &x86::cached_attention_head_avx512},
    {"avx2", Isa::avx2, &x86::cached_attention_head_avx2},
    {"reference", Isa::portable, &reference::cached_attention_head},
}};
constexpr std::array<Variant<RmsNormFn>, 3> rms_norm_variants{{
    {"avx512", Isa::avx512, &x86::rms_norm_avx512},
    {"avx2", Isa::avx2, &x86::rms_norm_avx2},
    {"reference", Isa::portable, &reference::rms_norm},
}};
constexpr std::array<Variant<GeluMulFn>, 3> gelu_mul_variants{{
    {"avx512", Isa::avx512, &x86::gelu_mul_avx512},
    {"avx2", Isa::avx2, &x86::gelu_mul_avx2},
    {"reference", Isa::portable, &reference::gelu_mul},
}};

constexpr std::array<Variant<GeluMulBf16Fn>, 3> gelu_mul_bf16_variants{{
    {"avx512", Isa::avx512, &x86::gelu_mul_bf16_avx512},
    {"avx2", Isa::avx2, &x86::gelu_mul_bf16_avx2},
    {"reference", Isa::portable, &reference::gelu_mul_bf16},
}};

constexpr std::array<Variant<SiluMulFn>, 3> silu_mul_variants{{
    {"avx512", Isa::avx512, &x86::silu_mul_avx512},
    {"avx2", Isa::avx2, &x86::silu_mul_avx2},
    {"reference", Isa::portable, &reference::silu_mul},
}};
constexpr std::array<Variant<GatedDeltaHeadFn>, 2> gated_delta_head_variants{{
    {"avx512", Isa::avx512, &x86::gated_delta_rule_head_avx512},
    {"reference", Isa::portable, &reference::gated_delta_rule_head},
}};
constexpr std::array<Variant<CausalConv1dSiluFn>, 2> causal_conv1d_silu_variants{{
    {"avx512", Isa::avx512, &x86::causal_conv1d_silu_avx512},
    {"reference", Isa::portable, &reference::causal_conv1d_silu},
}};
constexpr std::array<Variant<L2NormScaledFn>, 2> l2_norm_scaled_variants{{
    {"avx512", Isa::avx512, &x86::l2_norm_scaled_avx512},
    {"reference", Isa::portable, &reference::l2_norm_scaled},
}};
constexpr std::array<Variant<GatedRmsNormFn>, 2> gated_rms_norm_variants{{
    {"avx512", Isa::avx512, &x86::gated_rms_norm_avx512},
    {"reference", Isa::portable, &reference::gated_rms_norm},
}};

// AMX-INT8 first, as AMX is for bf16, so that the op test's amx_bf16 class runs it where AMX exists;
// it was written without an AMX CPU to run or time it on (docs/benchmarks/quantized.md).
constexpr std::array<Variant<QuantizedMatmulFn>, 5> quantized_matmul_variants{{
    {"amx_int8", Isa::amx_int8, &x86::quantized_matmul_amx_int8},
    {"avx512_vnni", Isa::avx512_vnni, &x86::quantized_matmul_avx512_vnni},
    {"avx_vnni", Isa::avx_vnni, &x86::quantized_matmul_avx_vnni},
    {"avx2", Isa::avx2, &x86::quantized_matmul_avx2},
    {"reference", Isa::portable, &reference::quantized_matmul},
}};
constexpr std::array<Variant<QuantizeRowFn>, 2> quantize_row_variants{{
    {"avx512", Isa::avx512, &x86::quantize_row_avx512},
    {"reference", Isa::portable, &reference::quantize_row},
}};

template <class Fn, std::size_t count>
Variant<Fn> first_supported(const std::array<Variant<Fn>, count>& variants, Precision precision = Precision::fp32) {
  for (const Variant<Fn>& variant : variants)
    if (isa_supported(variant.isa) && (precision == Precision::bf16 || !variant.bf16_arithmetic)) return variant;
  return variants.back();
}

// Below these sizes a second thread costs more to wake than it saves. Waking one is not cheap:
// with OMP_WAIT_POLICY=passive (s1serve's default) each parallel region costs tens of µs of
// futex wake-up and, on a busy machine with the default spin policy, can stall for a whole
// scheduler slice. So memory-bound passes (LayerNorm, bf16 conversion) stay on the calling thread
// at one sequence's size (128 × 384 LayerNorm: ~13 µs; 128 × 1536 conversion: ~10 µs) and split
// only at batch sizes; compute-bound GELU splits earlier.
constexpr std::size_t min_elements_per_thread = 16384;
constexpr std::size_t min_layer_norm_elements_per_thread = 131072;
constexpr std::size_t min_convert_elements_per_thread = 262144;
constexpr std::size_t min_heads_per_thread = 1;

}  // namespace

bool isa_supported(Isa isa) {
  const CpuFeatures& cpu = cpu_features();
  switch (isa) {
    case Isa::portable:
      return true;
    case Isa::avx2:
      return cpu.avx2_fma();
    case Isa::avx_vnni:
      return cpu.avx2_with_vnni();
    case Isa::avx512:
      return cpu.avx512();
    case Isa::avx512_vnni:
      return cpu.avx512_with_vnni();
    case Isa::amx_int8:
      return cpu.amx_with_int8();
    case Isa::avx512_bf16:
      return cpu.avx512_with_bf16();
    case Isa::amx_bf16:
      return cpu.amx_with_bf16();
  }
  return false;
}

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::portable:
      return "portable";
    case Isa::avx2:
      return "avx2";
    case Isa::avx_vnni:
      return "avx_vnni";
    case Isa::avx512:
      return "avx512";
    case Isa::avx512_vnni:
      return "avx512_vnni";
    case Isa::amx_int8:
      return "amx_int8";
    case Isa::avx512_bf16:
      return "avx512_bf16";
    case Isa::amx_bf16:
      return "amx_bf16";
  }
  return "unknown";
}

const OpVariants& op_variants() {
  static const OpVariants variants{layer_norm_variants,
                                   gelu_variants,
                                   gelu_mul_variants,
                                   softmax_variants,
                                   convert_variants,
                                   attention_head_variants,
                                   cached_attention_head_variants,
                                   rms_norm_variants,
                                   silu_mul_variants,
                                   gated_delta_head_variants,
                                   causal_conv1d_silu_variants,
                                   l2_norm_scaled_variants,
                                   gated_rms_norm_variants,
                                   gelu_mul_bf16_variants,
                                   quantized_matmul_variants,
                                   quantize_row_variants};
  return variants;
}

const SelectedVariants& selected_variants() {
  static const SelectedVariants selected{first_supported(layer_norm_variants),
                                         first_supported(gelu_variants),
                                         first_supported(gelu_mul_variants),
                                         first_supported(softmax_variants),
                                         first_supported(convert_variants),
                                         first_supported(attention_head_variants),
                                         first_supported(attention_head_variants, Precision::bf16),
                                         first_supported(cached_attention_head_variants),
                                         first_supported(cached_attention_head_variants, Precision::bf16),
                                         first_supported(rms_norm_variants),
                                         first_supported(silu_mul_variants),
                                         first_supported(gated_delta_head_variants),
                                         first_supported(causal_conv1d_silu_variants),
                                         first_supported(l2_norm_scaled_variants),
                                         first_supported(gated_rms_norm_variants),
                                         first_supported(gelu_mul_bf16_variants),
                                         first_supported(quantized_matmul_variants),
                                         first_supported(quantize_row_variants)};
  return selected;
}

namespace {

void run_layer_norm(std::span<const float> x, std::span<const float> residual, std::span<const float> gamma,
                    std::span<const float> beta, float eps, std::span<float> y) {
  const std::size_t width = gamma.size();
  assert(width > 0 && x.size() % width == 0 && y.size() == x.size());
  assert(residual.empty() || residual.size() == x.size());
  LayerNormFn* run = selected_variants().layer_norm.run;
  parallel_for(x.size() / width, (min_layer_norm_elements_per_thread + width - 1) / width,
               [&](std::size_t begin, std::size_t end) {
                 const std::size_t offset = begin * width;
                 const std::size_t size = (end - begin) * width;
                 run(x.subspan(offset, size), residual.empty() ? residual : residual.subspan(offset, size), gamma, beta,
                     eps, y.subspan(offset, size));
               });
}

}  // namespace

void layer_norm(std::span<const float> x, std::span<const float> gamma, std::span<const float> beta, float eps,
                std::span<float> y) {
  run_layer_norm(x, {}, gamma, beta, eps, y);
}

void add_layer_norm(std::span<const float> x, std::span<const float> residual, std::span<const float> gamma,
                    std::span<const float> beta, float eps, std::span<float> y) {
  run_layer_norm(x, residual, gamma, beta, eps, y);
}

void layer_norm_to_bf16(std::span<const float> x, std::span<const float> gamma, std::span<const float> beta, float eps,
                        std::span<Bf16Bits> y) {
  const std::size_t width = gamma.size();
  assert(width > 0 && x.size() % width == 0 && y.size() == x.size());
  LayerNormFn* norm = selected_variants().layer_norm.run;
  rows_to_bf16(x.size() / width, width, min_layer_norm_elements_per_thread, y,
               [&](std::size_t row, std::span<float> block) {
                 norm(x.subspan(row * width, block.size()), {}, gamma, beta, eps, block);
               });
}

void layer_norm_to_bf16(std::span<const float> x, std::span<const float> gamma, std::span<const float> beta, float eps,
                        std::span<float> y, std::span<Bf16Bits> y_bf16) {
  const std::size_t width = gamma.size();
  assert(width > 0 && x.size() % width == 0 && y.size() == x.size() && y_bf16.size() == x.size());
  LayerNormFn* norm = selected_variants().layer_norm.run;
  rows_to_bf16(
      x.size() / width, width, min_layer_norm_elements_per_thread, y_bf16,
      [&](std::size_t row, std::span<float> block) {
        norm(x.subspan(row * width, block.size()), {}, gamma, beta, eps, block);
      },
      y);
}

void gelu(std::span<const float> x, std::span<float> y) {
  assert(y.size() == x.size());
  GeluFn* run = selected_variants().gelu.run;
  parallel_for(x.size(), min_elements_per_thread, [&](std::size_t begin, std::size_t end) {
    run(x.subspan(begin, end - begin), y.subspan(begin, end - begin));
  });
}

void gelu_mul(std::span<const float> x, std::span<const float> gate, std::span<float> y) {
  assert(gate.size() == x.size() && y.size() == x.size());
  GeluMulFn* run = selected_variants().gelu_mul.run;
  parallel_for(x.size(), min_elements_per_thread, [&](std::size_t begin, std::size_t end) {
    run(x.subspan(begin, end - begin), gate.subspan(begin, end - begin), y.subspan(begin, end - begin));
  });
}

void geglu(std::span<const float> x, std::size_t width, std::span<float> y) {
  assert(width > 0 && x.size() % (2 * width) == 0 && y.size() == x.size() / 2);
  GeluMulFn* run = selected_variants().gelu_mul.run;
  parallel_for(y.size() / width, (min_elements_per_thread + width - 1) / width,
               [&](std::size_t begin, std::size_t end) {
                 for (std::size_t row = begin; row < end; ++row)
                   run(x.subspan(2 * row * width, width), x.subspan((2 * row + 1) * width, width),
                       y.subspan(row * width, width));
               });
}

void geglu_to_bf16(std::span<const float> x, std::size_t width, std::span<Bf16Bits> y) {
  gated_halves_to_bf16(x, width, min_elements_per_thread, y, selected_variants().gelu_mul.run);
}

void geglu_to_bf16(std::span<const Bf16Bits> x, std::size_t width, std::span<Bf16Bits> y) {
  gated_halves_to_bf16(x, width, min_elements_per_thread, y, selected_variants().gelu_mul_bf16.run);
}

void softmax(std::span<const float> x, std::size_t columns, std::span<float> y) {
  assert(columns > 0 && x.size() % columns == 0 && y.size() == x.size());
  SoftmaxFn* run = selected_variants().softmax.run;
  parallel_for(x.size() / columns, (min_elements_per_thread + columns - 1) / columns,
               [&](std::size_t begin, std::size_t end) {
                 run(x.subspan(begin * columns, (end - begin) * columns), columns,
                     y.subspan(begin * columns, (end - begin) * columns));
               });
}

void convert_fp32_to_bf16(std::span<const float> x, std::span<Bf16Bits> y) {
  assert(y.size() == x.size());
  ConvertFp32ToBf16Fn* run = selected_variants().convert_fp32_to_bf16.run;
  parallel_for(x.size(), min_convert_elements_per_thread, [&](std::size_t begin, std::size_t end) {
    run(x.subspan(begin, end - begin), y.subspan(begin, end - begin));
  });
}

void packed_attention(std::span<const PackedSequence> layout, std::span<const float> qkv, std::size_t heads,
                      std::size_t head_dim, std::size_t half_window, std::span<float> out, Precision precision,
                      const RopeTable* rope) {
  const std::size_t width = heads * head_dim;
  for (std::size_t first = 0; first < layout.size();) {
    std::size_t last = first + 1;
    while (last < layout.size() && layout[last].length == layout[first].length) ++last;
    const std::size_t batch = last - first;
    const std::size_t seq = layout[first].length;
    const std::size_t offset = layout[first].offset;
    const std::vector<std::size_t> lengths(batch, seq);
    // A window as wide as the sequence is no window: the unwindowed kernel is the faster path.
    const bool windowed = half_window != 0 && seq > half_window + 1;
    const AttentionShape shape{.batch = batch,
                               .seq = seq,
                               .heads = heads,
                               .kv_heads = heads,
                               .head_dim = head_dim,
                               .window = windowed ? half_window : 0};
    attention(qkv.subspan(offset * 3 * width, batch * seq * 3 * width), lengths, shape, /*causal=*/false,
              out.subspan(offset * width, batch * seq * width), precision, rope);
    first = last;
  }
}

namespace {

// packed_attention_rows over fp32 (qkv) or bf16 (qkv_bf16) projections of qkv_size values, its output
// as fp32 (out) or bf16 (out_bf16) rows of width heads·head_dim.
void attention_rows(std::span<const PackedSequence> layout, const float* qkv, const Bf16Bits* qkv_bf16,
                    [[maybe_unused]] std::size_t qkv_size, std::size_t heads, std::size_t head_dim,
                    std::size_t half_window, std::size_t row_begin, std::size_t row_end, float* out, Bf16Bits* out_bf16,
                    Precision precision, const RopeTable* rope, const StagedKeyValues* staged = nullptr) {
  assert(rope == nullptr || rope->rotary_dim == head_dim);
  AttentionHeadFn* run = precision == Precision::bf16 ? selected_variants().attention_head_bf16.run
                                                      : selected_variants().attention_head.run;
  const std::size_t width = heads * head_dim;
  const float scale = 1.0F / std::sqrt(static_cast<float>(head_dim));
  for (const PackedSequence& sequence : layout) {
    const std::size_t first = std::max(row_begin, sequence.offset);
    const std::size_t last = std::min(row_end, sequence.offset + sequence.length);
    if (first >= last) continue;
    assert(qkv_size >= (sequence.offset + sequence.length) * 3 * width);
    assert(rope == nullptr || rope->positions >= sequence.length);
    const std::size_t first_value = sequence.offset * 3 * width;
    const float* rows = qkv == nullptr ? nullptr : qkv + first_value;
    const Bf16Bits* rows_bf16 = qkv_bf16 == nullptr ? nullptr : qkv_bf16 + first_value;
    // A window as wide as the sequence is no window: the unwindowed kernel is the faster path.
    const bool windowed = half_window != 0 && sequence.length > half_window + 1;
    for (std::size_t h = 0; h < heads; ++h) {
      const std::size_t column = sequence.offset * width + h * head_dim;
      run(AttentionHeadTask{
          .q = rows == nullptr ? nullptr : rows + h * head_dim,
          .k = rows == nullptr ? nullptr : rows + (heads + h) * head_dim,
          .v = rows == nullptr ? nullptr : rows + (2 * heads + h) * head_dim,
          .qkv_stride = 3 * width,
          .out = out == nullptr ? nullptr : out + column,
          .out_stride = width,
          .seq = sequence.length,
          .length = sequence.length,
          .head_dim = head_dim,
          .causal = false,
          .scale = scale,
          .window = windowed ? half_window : 0,
          .rope_cosines = rope == nullptr ? nullptr : rope->cosines.data(),
          .rope_sines = rope == nullptr ? nullptr : rope->sines.data(),
          .query_begin = first - sequence.offset,
          .query_end = last - sequence.offset,
          .out_bf16 = out_bf16 == nullptr ? nullptr : out_bf16 + column,
          .q_bf16 = rows_bf16 == nullptr ? nullptr : rows_bf16 + h * head_dim,
          .k_bf16 = rows_bf16 == nullptr ? nullptr : rows_bf16 + (heads + h) * head_dim,
          .v_bf16 = rows_bf16 == nullptr ? nullptr : rows_bf16 + (2 * heads + h) * head_dim,
          .staged_keys_values =
              staged == nullptr ? nullptr : staged->head(static_cast<std::size_t>(&sequence - layout.data()), h),
      });
    }
  }
}

}  // namespace

void packed_attention_rows(std::span<const PackedSequence> layout, std::span<const float> qkv, std::size_t heads,
                           std::size_t head_dim, std::size_t half_window, std::size_t row_begin, std::size_t row_end,
                           std::span<float> out, Precision precision, const RopeTable* rope) {
  assert(out.size() >= row_end * heads * head_dim);
  attention_rows(layout, qkv.data(), nullptr, qkv.size(), heads, head_dim, half_window, row_begin, row_end, out.data(),
                 nullptr, precision, rope);
}

void packed_attention_rows(std::span<const PackedSequence> layout, std::span<const float> qkv, std::size_t heads,
                           std::size_t head_dim, std::size_t half_window, std::size_t row_begin, std::size_t row_end,
                           std::span<Bf16Bits> out, Precision precision, const RopeTable* rope) {
  assert(out.size() >= row_end * heads * head_dim);
  attention_rows(layout, qkv.data(), nullptr, qkv.size(), heads, head_dim, half_window, row_begin, row_end, nullptr,
                 out.data(), precision, rope);
}

void packed_attention_rows(std::span<const PackedSequence> layout, std::span<const Bf16Bits> qkv, std::size_t heads,
                           std::size_t head_dim, std::size_t half_window, std::size_t row_begin, std::size_t row_end,
                           std::span<Bf16Bits> out, Precision precision, const RopeTable* rope) {
  assert(out.size() >= row_end * heads * head_dim);
  attention_rows(layout, nullptr, qkv.data(), qkv.size(), heads, head_dim, half_window, row_begin, row_end, nullptr,
                 out.data(), precision, rope);
}

bool StagedKeyValues::available(std::size_t head_dim) {
  return selected_variants().attention_head_bf16.run == &x86::attention_head_amx_bf16 && head_dim % 32 == 0;
}

void StagedKeyValues::reset(std::span<const PackedSequence> layout, std::size_t heads, std::size_t head_dim) {
  assert(available(head_dim));
  heads_ = heads;
  head_dim_ = head_dim;
  offsets_.clear();
  head_sizes_.clear();
  std::size_t size = 0;
  for (const PackedSequence& sequence : layout) {
    offsets_.push_back(size);
    head_sizes_.push_back(x86::staged_head_size_amx_bf16(sequence.length, head_dim));
    size += heads * head_sizes_.back();
  }
  data_.resize(size);
}

void StagedKeyValues::stage(std::span<const PackedSequence> layout, std::span<const Bf16Bits> qkv,
                            std::size_t row_begin, std::size_t row_end) {
  assert(layout.size() == offsets_.size());
  const std::size_t width = heads_ * head_dim_;
  for (std::size_t s = 0; s < layout.size(); ++s) {
    const PackedSequence& sequence = layout[s];
    const std::size_t first = std::max(row_begin, sequence.offset);
    const std::size_t last = std::min(row_end, sequence.offset + sequence.length);
    if (first >= last) continue;
    assert(qkv.size() >= (sequence.offset + sequence.length) * 3 * width);
    const Bf16Bits* rows = qkv.data() + sequence.offset * 3 * width;
    for (std::size_t h = 0; h < heads_; ++h) {
      x86::stage_keys_values_amx_bf16(rows + (heads_ + h) * head_dim_, rows + (2 * heads_ + h) * head_dim_, 3 * width,
                                      sequence.length, head_dim_, first - sequence.offset, last - sequence.offset,
                                      data_.data() + offsets_[s] + h * head_sizes_[s]);
    }
  }
}

void packed_attention_rows(std::span<const PackedSequence> layout, std::span<const Bf16Bits> qkv,
                           const StagedKeyValues& staged, std::size_t heads, std::size_t head_dim,
                           std::size_t half_window, std::size_t row_begin, std::size_t row_end,
                           std::span<Bf16Bits> out) {
  assert(out.size() >= row_end * heads * head_dim);
  attention_rows(layout, nullptr, qkv.data(), qkv.size(), heads, head_dim, half_window, row_begin, row_end, nullptr,
                 out.data(), Precision::bf16, nullptr, &staged);
}

void attention(std::span<const float> qkv, std::span<const std::size_t> lengths, AttentionShape shape, bool causal,
               std::span<float> out, Precision precision, const RopeTable* rope) {
  assert(rope == nullptr || (rope->rotary_dim == shape.head_dim && rope->positions >= shape.seq));
  assert(shape.heads > 0 && shape.kv_heads > 0 && shape.heads % shape.kv_heads == 0 && shape.head_dim > 0);
  assert(lengths.size() == shape.batch);
  assert(qkv.size() == shape.batch * shape.seq * shape.qkv_width());
  assert(out.size() == shape.batch * shape.seq * shape.out_width());
  AttentionHeadFn* run = precision == Precision::bf16 ? selected_variants().attention_head_bf16.run
                                                      : selected_variants().attention_head.run;
  const std::size_t group = shape.heads / shape.kv_heads;
  const float scale = 1.0F / std::sqrt(static_cast<float>(shape.head_dim));
  parallel_for(shape.batch * shape.heads, min_heads_per_thread, [&](std::size_t begin, std::size_t end) {
    for (std::size_t item = begin; item < end; ++item) {
      const std::size_t b = item / shape.heads;
      const std::size_t h = item % shape.heads;
      assert(lengths[b] <= shape.seq);
      const float* rows = qkv.data() + b * shape.seq * shape.qkv_width();
      const std::size_t kv_head = h / group;
      run(AttentionHeadTask{
          .q = rows + h * shape.head_dim,
          .k = rows + (shape.heads + kv_head) * shape.head_dim,
          .v = rows + (shape.heads + shape.kv_heads + kv_head) * shape.head_dim,
          .qkv_stride = shape.qkv_width(),
          .out = out.data() + b * shape.seq * shape.out_width() + h * shape.head_dim,
          .out_stride = shape.out_width(),
          .seq = shape.seq,
          .length = lengths[b],
          .head_dim = shape.head_dim,
          .causal = causal,
          .scale = scale,
          .window = shape.window,
          .rope_cosines = rope == nullptr ? nullptr : rope->cosines.data(),
          .rope_sines = rope == nullptr ? nullptr : rope->sines.data(),
      });
    }
  });
}

void mean_pool(std::span<const float> hidden, std::span<const std::size_t> lengths, std::size_t seq,
               std::span<float> out) {
  // Once per request over a few hundred KB: the reference is fast enough, no variant needed.
  reference::mean_pool(hidden, lengths, seq, out);
}

void l2_normalize(std::span<const float> x, std::size_t columns, std::span<float> y) {
  reference::l2_normalize(x, columns, y);
}

}  // namespace s1::backend::cpu
