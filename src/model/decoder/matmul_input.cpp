#include "model/decoder/matmul_input.h"

#include <cassert>
#include <stdexcept>

#include "backend/cpu/gated_delta.h"
#include "backend/cpu/rms_norm.h"
#include "backend/cpu/swiglu.h"

namespace s1::decoder {

void MatmulInput::resize(std::size_t rows, std::size_t width) {
  width_ = width;
  if (bf16_) {
    bf16_rows_.assign(rows * width, 0);  // 0x0000 is +0.0
  } else {
    fp32_.assign(rows * width, 0.0F);
  }
}

void MatmulInput::rms_norm(std::span<const float> x, std::span<const float> weight, float eps) {
  assert(weight.size() == width_);
  if (bf16_) {
    backend::cpu::rms_norm_to_bf16(x, weight, eps, bf16_rows_);
  } else {
    backend::cpu::rms_norm(x, weight, eps, fp32_);
  }
}

void MatmulInput::swiglu(std::span<const float> gate_up) {
  if (bf16_) {
    backend::cpu::swiglu_to_bf16(gate_up, width_, bf16_rows_);
  } else {
    backend::cpu::swiglu(gate_up, width_, fp32_);
  }
}

void MatmulInput::swiglu_of(const MatmulInput& input, const backend::cpu::PackedLinear& gate_up) {
  assert(input.bf16_ == bf16_ && gate_up.out_features() == 2 * width_);
  const std::size_t rows = bf16_ ? bf16_rows_.size() / width_ : fp32_.size() / width_;
  if (bf16_) {
    projected_bf16_.resize(rows * 2 * width_);
    gate_up.forward(std::span<const backend::cpu::Bf16Bits>(input.bf16_rows_), std::span(projected_bf16_));
    backend::cpu::swiglu_to_bf16(std::span<const backend::cpu::Bf16Bits>(projected_bf16_), width_, bf16_rows_);
  } else {
    projected_.resize(rows * 2 * width_);
    gate_up.forward(std::span<const float>(input.fp32_), std::span(projected_));
    backend::cpu::swiglu(projected_, width_, fp32_);
  }
}

void MatmulInput::gated_rms_norm(std::span<const float> x, std::span<const float> gate, std::span<const float> weight,
                                 float eps) {
  if (bf16_) {
    backend::cpu::gated_rms_norm_to_bf16(x, gate, weight, eps, std::span(bf16_rows_).first(x.size()));
  } else {
    backend::cpu::gated_rms_norm(x, gate, weight, eps, std::span(fp32_).first(x.size()));
  }
}

void MatmulInput::attention(backend::cpu::Team& team, backend::cpu::CachedAttentionWorkspace& workspace,
                            const backend::cpu::CachedAttentionBranches& attention) {
  if (bf16_) {
    backend::cpu::cached_attention_branches(team, workspace, attention, std::span(bf16_rows_));
  } else {
    backend::cpu::cached_attention_branches(team, workspace, attention, std::span(fp32_));
  }
}

void MatmulInput::project(const backend::cpu::PackedLinear& linear, std::span<float> y) const {
  if (bf16_) {
    linear.forward(std::span<const backend::cpu::Bf16Bits>(bf16_rows_), y);
  } else {
    linear.forward(std::span<const float>(fp32_), y);
  }
}

void MatmulInput::project_accumulate(const backend::cpu::PackedLinear& linear, std::span<float> y) const {
  if (bf16_) {
    linear.forward_accumulate(std::span<const backend::cpu::Bf16Bits>(bf16_rows_), y);
  } else {
    linear.forward_accumulate(std::span<const float>(fp32_), y);
  }
}

std::span<const float> MatmulInput::fp32() const {
  if (bf16_) throw std::logic_error("MatmulInput: bf16 rows have no fp32 form");
  return fp32_;
}

}  // namespace s1::decoder
