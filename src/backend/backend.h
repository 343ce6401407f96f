#pragma once
// The backend seam (DESIGN.md sections 2 and 3): tensors that know their dtype, shape, strides and
// device, and the ops the model families run, behind one interface. backend/reference/ defines every
// op plainly (the definition each backend is tested against, tests/unit/backend/ops_test.cpp);
// backend/cpu/ runs them with the CPU kernels. Nothing here names a thread, an ISA or a layout.

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string_view>

namespace s1::backend {

// q8_0 and q4_k are ggml's quantised blocks (backend/quant_blocks.h): a row's values are stored in
// blocks of block_values(dtype) values, block_bytes(dtype) bytes each, so a row's length is a
// multiple of the block; the other dtypes are blocks of one value.
enum class DType { fp32, bf16, f16, i32, i64, q8_0, q4_k };
enum class Device { cpu, cuda };

// Bytes per value; 0 for a quantised dtype, whose values have no bytes of their own.
[[nodiscard]] std::size_t dtype_size(DType dtype);
[[nodiscard]] std::string_view dtype_name(DType dtype);
[[nodiscard]] bool quantized(DType dtype);
[[nodiscard]] std::size_t block_values(DType dtype);
[[nodiscard]] std::size_t block_bytes(DType dtype);
// The bytes `values` consecutive values take (values a multiple of the block).
[[nodiscard]] std::size_t storage_bytes(DType dtype, std::size_t values);

// bf16 is the upper half of an fp32; these are exact (widening) and round to nearest even
// (narrowing, NaN kept), as torch and oneDNN do.
[[nodiscard]] float bf16_to_float(std::uint16_t bits);
[[nodiscard]] std::uint16_t float_to_bf16(float value);
// IEEE half precision (f16 tensors, the scales inside quantised blocks): exact widening, and
// narrowing rounded to nearest even (overflow to infinity, NaN kept).
[[nodiscard]] float f16_to_float(std::uint16_t bits);
[[nodiscard]] std::uint16_t float_to_f16(float value);

inline constexpr std::size_t max_rank = 4;

// A strided view of values of one dtype on one device, with whatever keeps the bytes alive: an
// owning buffer (Tensor::empty, Backend::allocate), a checkpoint's mapping (`owner` of view()) or
// nothing, when the caller guarantees the bytes outlive the view. Copies share the bytes. Strides
// are in values; rows (dimension 0) may be strided, the last dimension is contiguous unless a
// stride says otherwise. Views of read-only bytes (a mapped checkpoint) may not be written.
class Tensor {
 public:
  Tensor() = default;

  // A new contiguous host buffer, zero-filled, 64-byte aligned.
  [[nodiscard]] static Tensor empty(DType dtype, std::initializer_list<std::size_t> shape);
  [[nodiscard]] static Tensor empty(DType dtype, std::span<const std::size_t> shape);
  // Contiguous views of bytes someone else owns.
  [[nodiscard]] static Tensor view(void* data, DType dtype, std::span<const std::size_t> shape,
                                   std::shared_ptr<const void> owner = {}, Device device = Device::cpu);
  [[nodiscard]] static Tensor view_read_only(const void* data, DType dtype, std::span<const std::size_t> shape,
                                             std::shared_ptr<const void> owner = {}, Device device = Device::cpu);
  // A contiguous host view of a span (fp32, bf16 as uint16_t, i32, i64), shape {span.size()} unless given.
  [[nodiscard]] static Tensor of(std::span<float> values, std::initializer_list<std::size_t> shape = {});
  [[nodiscard]] static Tensor of(std::span<const float> values, std::initializer_list<std::size_t> shape = {});
  [[nodiscard]] static Tensor of(std::span<std::uint16_t> bf16_values, std::initializer_list<std::size_t> shape = {});
  [[nodiscard]] static Tensor of(std::span<const std::uint16_t> bf16_values,
                                 std::initializer_list<std::size_t> shape = {});
  [[nodiscard]] static Tensor of(std::span<const std::int32_t> values);
  [[nodiscard]] static Tensor of(std::span<const std::int64_t> values);

  [[nodiscard]] bool defined() const { return data_ != nullptr; }
  [[nodiscard]] DType dtype() const { return dtype_; }
  [[nodiscard]] Device device() const { return device_; }
  [[nodiscard]] std::size_t rank() const { return rank_; }
  [[nodiscard]] std::size_t dim(std::size_t i) const { return shape_[i]; }
  [[nodiscard]] std::size_t stride(std::size_t i) const { return strides_[i]; }
  // Dimension 0, and the values in one row (the product of the other dimensions).
  [[nodiscard]] std::size_t rows() const { return rank_ == 0 ? 0 : shape_[0]; }
  [[nodiscard]] std::size_t row_size() const;
  [[nodiscard]] std::size_t elements() const;
  [[nodiscard]] bool contiguous() const;
  [[nodiscard]] bool writable() const { return writable_; }

  // The first value; T must match the dtype's size. data<T>() needs a writable tensor.
  template <class T>
  [[nodiscard]] T* data() const {
    check_access(sizeof(T), true);
    return static_cast<T*>(data_);
  }
  template <class T>
  [[nodiscard]] const T* read() const {
    check_access(sizeof(T), false);
    return static_cast<const T*>(data_);
  }
  // Every value of a contiguous tensor.
  template <class T>
  [[nodiscard]] std::span<T> values() const {
    check_contiguous();
    return {data<T>(), elements()};
  }
  template <class T>
  [[nodiscard]] std::span<const T> read_values() const {
    check_contiguous();
    return {read<T>(), elements()};
  }
  // The stored bytes of a contiguous tensor of any dtype (a quantised one's blocks).
  [[nodiscard]] std::span<const std::byte> read_bytes() const;

  // Rows [begin, begin + count) of dimension 0, and columns [begin, begin + count) of a 2-d tensor
  // (a strided view, e.g. the keys inside a fused QKV projection's rows); a quantised tensor's
  // columns only in whole blocks.
  [[nodiscard]] Tensor slice_rows(std::size_t begin, std::size_t count) const;
  [[nodiscard]] Tensor slice_columns(std::size_t begin, std::size_t count) const;
  // The same values under another shape (contiguous tensors only).
  [[nodiscard]] Tensor reshape(std::initializer_list<std::size_t> shape) const;

 private:
  static Tensor make(void* data, DType dtype, std::span<const std::size_t> shape, std::shared_ptr<const void> owner,
                     Device device, bool writable);
  void check_access(std::size_t value_size, bool write) const;
  void check_contiguous() const;

  void* data_ = nullptr;
  std::shared_ptr<const void> owner_;
  DType dtype_ = DType::fp32;
  Device device_ = Device::cpu;
  std::size_t rank_ = 0;
  std::array<std::size_t, max_rank> shape_{};
  std::array<std::size_t, max_rank> strides_{};
  bool writable_ = false;
};

// The arithmetic of a matrix product: fp32, or operands rounded to bf16 with fp32 accumulation.
enum class Arithmetic { fp32, bf16 };
// GELU is exact (erf), as torch's default; gelu_tanh is torch's approximate="tanh" (the Qwen vision
// towers' gelu_pytorch_tanh); ReLU is max(x, 0).
enum class Activation { none, gelu, relu, gelu_tanh };

// A weight matrix in the form a backend's matmul prefers, built once by Backend::pack_matmul; the
// backend owns the layout, callers only the handle.
class PackedMatrix {
 public:
  virtual ~PackedMatrix() = default;
  [[nodiscard]] virtual std::size_t in_features() const = 0;
  [[nodiscard]] virtual std::size_t out_features() const = 0;
};

// y = activation(x·Wᵀ + bias) (+ y when accumulating). A quantised W (q8_0, q4_k) multiplies x
// quantised per row in blocks of 32 values (quantize_activation_block in backend/quant_blocks.h:
// int8, scale max|x|/127), whatever the arithmetic says, and takes no activation. Bias and activation are packed with W
// (a backend may fold them into its primitive); the accumulation and y's dtype (fp32 or bf16) are the call's.
// Accumulating needs Activation::none and an fp32 y.
struct MatmulCall {
  Tensor x{};  // [M, in_features] fp32 or bf16
  const PackedMatrix* weight = nullptr;
  bool accumulate = false;
  Tensor y{};  // [M, out_features] fp32 or bf16
};

// Normalisation over each row of x ([rows, width], fp32): RMSNorm y = x/√(mean(x²)+eps)·weight,
// gated RMSNorm ·SiLU(gate), LayerNorm (x [+ residual] − mean)/√(var+eps)·weight + bias. y fp32 or
// bf16 (the next bf16 matmul's input); y may be x when both are fp32.
struct NormCall {
  enum class Kind { rms, rms_gated, layer } kind = Kind::rms;
  Tensor x{};
  Tensor weight{};    // [width] fp32
  Tensor bias{};      // layer: [width] fp32
  Tensor residual{};  // layer: [rows, width] fp32 or undefined
  Tensor gate{};      // rms_gated: [rows, width] fp32
  float eps = 1e-6F;
  Tensor y{};
};

// Rotate-half rotary embedding in place on the first rotary_dim values of each head of each row of x
// ([rows, heads·head_dim] fp32, rows may be strided), row r at position positions[r] (i64): value
// pairs (j, j + rotary_dim/2) rotate by position·theta^(−2j/rotary_dim), angles in fp32 as
// Transformers computes them. rotary_dim < head_dim is partial rotary.
// Multimodal RoPE (Qwen2/3-VL M-RoPE) when `axes` is given (rotary_dim / 2 entries, each 0, 1 or 2):
// positions then holds [3 · rows] i64, each axis's positions for every row, axis after axis, and
// frequency j rotates by the position of axis axes[j] of its row.
struct RopeCall {
  Tensor x{};
  std::size_t heads = 0, head_dim = 0, rotary_dim = 0;
  float theta = 10000.0F;
  Tensor positions{};
  std::span<const std::uint8_t> axes = {};
};

// One run of rows that attends together: rows [offset, offset + length) of q, k, v and out.
struct AttentionSegment {
  std::size_t offset = 0;
  std::size_t length = 0;
};

// softmax(scale·Q·Kᵀ + mask)·V for every segment: segment row t (absolute position P + t, P the
// prefix length) sees the P prefix keys (positions 0..P−1) and its own keys (positions P..), never
// another segment's; causal limits it to positions ≤ its own, window (when not 0) to positions j
// with |i − j| ≤ window. Query head h reads key/value head h / (heads / kv_heads). An encoder's
// packed batch is segments without a prefix; a decoder's branches share one prefix. fp32 Q, K, V
// (rows may be strided, e.g. inside a fused projection), out [Σ rows, heads·head_dim] fp32 or bf16.
// Arithmetic bf16 lets a backend round Q, K, V and the weights to bf16 (fp32 softmax and sums).
struct AttentionCall {
  Tensor q{};                     // [rows, heads·head_dim]
  Tensor k{}, v{};                // [rows, kv_heads·head_dim]
  Tensor prefix_k{}, prefix_v{};  // [P, kv_heads·head_dim] or undefined (P = 0)
  std::span<const AttentionSegment> segments;
  std::size_t heads = 0, kv_heads = 0, head_dim = 0;
  bool causal = true;
  std::size_t window = 0;
  float scale = 1.0F;
  Arithmetic arithmetic = Arithmetic::fp32;
  Tensor out{};
};

// Qwen3.5's gated delta rule per value head over `rows` tokens of one sequence, from state S
// ([v_heads, k_dim, v_dim] fp32): S ← S·exp(g_t); S ← S + k_t ⊗ β_t(v_t − Sᵀk_t); out_t = Sᵀq_t.
// Key head h / (v_heads / k_heads) serves value head h.
struct GatedDeltaCall {
  Tensor query{}, key{};  // [rows, k_heads·k_dim] fp32, L2-normalised (query also scaled)
  Tensor value{};         // [rows, v_heads·v_dim] fp32, rows may be strided
  Tensor g{}, beta{};     // [rows, v_heads] fp32 (g: log decay ≤ 0)
  std::size_t k_heads = 0, v_heads = 0, k_dim = 0, v_dim = 0;
  // Chunked prefill only: the state before row 0 (undefined: zeros), read, not written; the
  // absolute position of row 0 and the chunk size the chunks are counted in from position 0.
  Tensor initial{};
  std::size_t first_position = 0, chunk_size = 64;
  Tensor state{};  // the state after the last row (the recurrent step also reads the state before)
  Tensor out{};    // [rows, v_heads·v_dim] fp32
};

// Depthwise causal convolutions over time that continue a sequence through `tail` ([kernel − 1,
// channels] fp32, the inputs just before row 0, oldest first; updated to the last kernel − 1):
//   silu:  y[t,c] = SiLU(Σ_j w[c,j]·x[t−(kernel−1)+j, c]), x [rows, channels] (strided rows allowed);
//   gated (LFM2): x [rows, 3·channels] = [B | C | X], the conv runs over B⊙X and
//          y[t,c] = C[t,c]·(bias[c] + Σ_j w[c,j]·(B⊙X)[t−(kernel−1)+j, c]).
struct ShortConvCall {
  enum class Kind { silu, gated } kind = Kind::silu;
  Tensor x{};
  Tensor weight{};  // [channels, kernel] fp32
  Tensor bias{};    // gated: [channels] fp32 or undefined
  Tensor tail{};
  Tensor y{};  // [rows, channels] fp32
};

// Gated linear units over fused rows x [rows, 2·width] = [a | b] (fp32 or bf16):
// SwiGLU y = SiLU(a)⊙b, GeGLU y = GELU(a)⊙b (exact erf GELU); y [rows, width] fp32 or bf16.
struct GluCall {
  enum class Kind { swiglu, geglu } kind = Kind::swiglu;
  Tensor x{};
  Tensor y{};
};

// A backend: memory, packed weights and the ops. Calls are synchronous; a backend does not throw
// for a call whose tensors have the documented shapes and dtypes (std::invalid_argument otherwise).
class Backend {
 public:
  virtual ~Backend() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  [[nodiscard]] virtual Device device() const = 0;

  // Zero-filled memory on this backend's device.
  [[nodiscard]] virtual Tensor allocate(DType dtype, std::span<const std::size_t> shape) = 0;
  // A host tensor's values on this device. A host backend may return `host` itself (weights read in
  // place from a mapped checkpoint).
  [[nodiscard]] virtual Tensor upload(const Tensor& host) = 0;
  // weight [out_features, in_features] fp32, bf16, q8_0 or q4_k (nn.Linear's layout), bias
  // [out_features] fp32 or undefined. Neither is read after the call.
  [[nodiscard]] virtual std::unique_ptr<PackedMatrix> pack_matmul(const Tensor& weight, const Tensor& bias,
                                                                  Arithmetic arithmetic, Activation activation) = 0;
  // Whether this backend runs matmuls in `arithmetic` (a CPU without AVX-512 has no bf16 matmul).
  [[nodiscard]] virtual bool supports(Arithmetic arithmetic) const = 0;

  virtual void matmul(const MatmulCall& call) = 0;
  virtual void norm(const NormCall& call) = 0;
  virtual void rope(const RopeCall& call) = 0;
  virtual void attention(const AttentionCall& call) = 0;
  // The chunked (WY) form over many rows, and the token-by-token recurrence (a decode step).
  virtual void gated_delta_chunked(const GatedDeltaCall& call) = 0;
  virtual void gated_delta_recurrent(const GatedDeltaCall& call) = 0;
  virtual void short_conv(const ShortConvCall& call) = 0;
  virtual void glu(const GluCall& call) = 0;
  // y = activation(x) elementwise, x and y fp32 of one shape (y may be x): an activation that cannot
  // ride on a matmul's epilogue, such as the GELU after a LayerNorm in CLM's heads.
  virtual void activate(Activation activation, const Tensor& x, const Tensor& y) = 0;
  // y[i] = table[ids[i]]: table [vocab, width] fp32 or bf16, ids i32, y [ids, width] fp32. An id
  // outside the table is std::out_of_range.
  virtual void embedding(const Tensor& table, const Tensor& ids, const Tensor& y) = 0;
  // y[i] = Σ_t weights[i, t]·table[ids[i, t]] (torch's embedding_bag, mode sum, per-sample weights;
  // an interpolated position grid): table [n, width] fp32 or bf16, ids [rows, taps] i32, weights
  // [rows, taps] fp32, y [rows, width] fp32. An id outside the table is std::out_of_range.
  virtual void embedding_bag(const Tensor& table, const Tensor& ids, const Tensor& weights, const Tensor& y) = 0;
  // y[i] = x[rows[i]]: x [n, width], y [rows, width] of x's dtype, rows i32.
  virtual void gather_rows(const Tensor& x, const Tensor& rows, const Tensor& y) = 0;
  // Softmax (or log-softmax) of the chosen rows of x [n, columns] fp32 into y [rows, columns] fp32;
  // rows i32, undefined meaning every row.
  virtual void softmax_rows(const Tensor& x, const Tensor& rows, bool log, const Tensor& y) = 0;
};

// Every backend compiled into this binary, registered in one table (registry.cpp): the reference
// backend always, the CPU backend on x86. `available` says whether it can run on this machine.
struct BackendEntry {
  std::string_view name;
  std::string_view description;
  bool (*available)();
  std::unique_ptr<Backend> (*create)();
};
[[nodiscard]] std::span<const BackendEntry> backends();
// The backend registered as `name`; std::invalid_argument naming the known ones otherwise.
[[nodiscard]] std::unique_ptr<Backend> create_backend(std::string_view name);

}  // namespace s1::backend
