#pragma once
// The activations a decoder layer feeds into its matmuls (the pre-norms' output, SwiGLU's), kept in
// the form the matmul reads: bf16 for a bf16 model, written so by the op that produces them, so the
// matmul skips its own fp32→bf16 conversion pass and no fp32 copy goes through memory; fp32 otherwise.

#include <cstddef>
#include <span>
#include <vector>

#include "backend/cpu/cached_attention.h"
#include "backend/cpu/convert.h"
#include "backend/cpu/linear.h"
#include "backend/cpu/precision.h"
#include "backend/cpu/team.h"

namespace s1::decoder {

class MatmulInput {
 public:
  // bf16 only where the matmuls are bf16; callers that also need the fp32 rows (an unmerged LoRA
  // adapter's low-rank terms read them) ask for fp32.
  explicit MatmulInput(backend::cpu::Precision precision) : bf16_(precision == backend::cpu::Precision::bf16) {}

  // rows × width zeros (padding rows no op writes stay zero).
  void resize(std::size_t rows, std::size_t width);

  // Row-wise RMSNorm of x ([rows, weight.size()], as resized).
  void rms_norm(std::span<const float> x, std::span<const float> weight, float eps);
  // silu(gate) ⊙ up of fused [rows, 2·width] rows [gate | up] (width as resized).
  void swiglu(std::span<const float> gate_up);
  // The same of input's rows through the fused [gate | up] projection `gate_up` (2·width outputs):
  // in bf16 the matmul writes the projection as bf16 (half the bytes to store, and to read back).
  void swiglu_of(const MatmulInput& input, const backend::cpu::PackedLinear& gate_up);
  // Gated RMSNorm (Qwen3.5's GDN output) of the first x.size() / width rows of x, over groups of
  // weight.size() values.
  void gated_rms_norm(std::span<const float> x, std::span<const float> gate, std::span<const float> weight, float eps);

  // The attention's output rows (as resized: heads·head_dim wide), the output projection's input,
  // written by the threads of `team` (backend::cpu::cached_attention_branches' team form).
  void attention(backend::cpu::Team& team, backend::cpu::CachedAttentionWorkspace& workspace,
                 const backend::cpu::CachedAttentionBranches& attention);

  // y = these rows · Wᵀ, or y += them · Wᵀ.
  void project(const backend::cpu::PackedLinear& linear, std::span<float> y) const;
  void project_accumulate(const backend::cpu::PackedLinear& linear, std::span<float> y) const;

  // The fp32 rows; only without bf16 (std::logic_error otherwise).
  [[nodiscard]] std::span<const float> fp32() const;

 private:
  bool bf16_;
  std::size_t width_ = 0;
  std::vector<float> fp32_;
  std::vector<backend::cpu::Bf16Bits> bf16_rows_;
  std::vector<float> projected_;  // swiglu_of's [gate | up] rows, in the form the matmul writes
  std::vector<backend::cpu::Bf16Bits> projected_bf16_;
};

}  // namespace s1::decoder
