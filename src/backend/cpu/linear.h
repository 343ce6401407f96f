#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "backend/backend.h"
#include "backend/cpu/convert.h"
#include "backend/cpu/precision.h"

namespace s1::backend::cpu {

enum class Activation { none, gelu };

// Whether PackedLinear can run at this precision on this CPU.
[[nodiscard]] bool linear_supported(Precision precision);
// The faster supported precision for a model's linear layers on this CPU (docs/benchmarks/kernels.md,
// "Paths per CPU class"): bf16 only where the CPU has bf16 arithmetic, since emulated bf16 matmuls
// are slower than fp32 ones.
[[nodiscard]] Precision preferred_linear_precision();

// The row count to hand PackedLinear for `rows` rows of work: at most 8 sizes per octave (multiples
// of 16 up to 128), so a server sees a bounded set of matmul primitives whatever the request mix.
[[nodiscard]] std::size_t padded_row_count(std::size_t rows);

// A linear layer y[M,N] = activation(x[M,K] · Wᵀ + b) with fp32 (or, at bf16 precision, bf16) input
// and output, GELU applied by the matmul as it stores, its weights reordered once, at construction,
// into the blocked layout its matmul prefers: our own AMX kernel's at bf16 on AMX CPUs (any M, no
// primitives), otherwise oneDNN's.
//
// oneDNN matmul primitives are built per row count M (oneDNN 2.6 fell back from brgemm/AMX to a generic
// GEMM for a runtime M; 3.2 keeps brgemm there, not yet timed against a fixed M) and shared
// process-wide between layers of the same shape; a new M costs 0.1–0.4 ms once, so callers should
// keep the set of row counts small (pad sequence lengths). forward() may be called from several
// threads at once.
class PackedLinear {
 public:
  // weight: [out_features, in_features] row-major fp32 (torch nn.Linear layout);
  // bias: [out_features] or empty. Neither is referenced after construction.
  PackedLinear(std::span<const float> weight, std::span<const float> bias, std::size_t in_features,
               std::size_t out_features, Precision precision, Activation activation = Activation::none);
  // Weights kept quantised: `blocks` holds out_features rows of in_features q8_0 or q4_k values
  // (ggml's layout, as in a GGUF file), multiplied by activations quantised per row on the fly
  // (backend/cpu/quantized_linear.h) on any CPU; `precision` only says which overloads (fp32 or
  // bf16 rows) the caller uses. No activation.
  PackedLinear(DType dtype, std::span<const std::byte> blocks, std::span<const float> bias, std::size_t in_features,
               std::size_t out_features, Precision precision);
  ~PackedLinear();
  PackedLinear(PackedLinear&&) noexcept;
  PackedLinear& operator=(PackedLinear&&) noexcept;
  PackedLinear(const PackedLinear&) = delete;
  PackedLinear& operator=(const PackedLinear&) = delete;

  // x: [M, in_features], y: [M, out_features], both row-major fp32, M = x.size() / in_features ≥ 1.
  void forward(std::span<const float> x, std::span<float> y) const;
  // y += x·Wᵀ + b, the sum done by the matmul as it stores (a residual connection without a pass of
  // its own). Only for Activation::none.
  void forward_accumulate(std::span<const float> x, std::span<float> y) const;
  // The same with activations already rounded to bf16 (layer_norm_to_bf16, geglu_to_bf16): no
  // conversion pass of its own. Only for Precision::bf16; equal to the fp32 overloads given the
  // rounded x.
  void forward(std::span<const Bf16Bits> x, std::span<float> y) const;
  void forward_accumulate(std::span<const Bf16Bits> x, std::span<float> y) const;
  // y written as bf16 (round to nearest even after bias and activation), for a consumer that reads
  // bf16: the matmul stores half the bytes (measured ~12% faster than an fp32 destination at
  // 512×1024×3072 with cold weights) and the next matmul needs no conversion pass. Only for
  // Precision::bf16; equal to rounding the fp32 overload's result, up to the order of the fp32 sums.
  void forward(std::span<const float> x, std::span<Bf16Bits> y) const;
  void forward(std::span<const Bf16Bits> x, std::span<Bf16Bits> y) const;

  [[nodiscard]] std::size_t in_features() const;
  [[nodiscard]] std::size_t out_features() const;
  [[nodiscard]] Precision precision() const;

 private:
  enum class Output { fp32, bf16 };
  struct Destination {
    void* data;
    std::size_t size;  // in values
    Output type;
  };
  void run_fp32(std::span<const float> x, Destination y, bool accumulate) const;
  // x: rows × in_features values of the layer's precision.
  void run(const void* x, std::size_t rows, Destination y, bool accumulate) const;

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace s1::backend::cpu
