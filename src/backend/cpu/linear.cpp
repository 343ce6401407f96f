#include "backend/cpu/linear.h"

#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "backend/cpu/convert.h"
#include "backend/cpu/cpu_features.h"
#include "backend/cpu/parallel.h"
#include "backend/cpu/quantized_linear.h"
#include "backend/cpu/team.h"
#include "backend/cpu/x86/linear_amx_bf16.h"

namespace s1::backend::cpu {
namespace {

using Dims = dnnl::memory::dims;
using DataType = dnnl::memory::data_type;
using FormatTag = dnnl::memory::format_tag;

// The row count whose primitive chooses the packed weight layout. brgemm picks the same blocked
// layout for every M we measured (8–512), so later primitives take that layout as given.
constexpr dnnl::memory::dim layout_probe_rows = 128;

const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

[[noreturn]] void fail(const char* what, const dnnl::error& error) {
  // Only a broken oneDNN install or a shape this build cannot run lands here: a programmer or
  // deployment error, not a request error, and kernels do not throw.
  std::fprintf(stderr, "s1::backend::cpu::PackedLinear: %s: %s\n", what, error.what());
  std::abort();
}

DataType data_type(Precision precision) { return precision == Precision::bf16 ? DataType::bf16 : DataType::f32; }

dnnl::matmul::primitive_desc describe(dnnl::memory::dim rows, dnnl::memory::dim in, dnnl::memory::dim out,
                                      Precision precision, bool has_bias, const dnnl::memory::desc& weights,
                                      Activation activation = Activation::none, bool accumulate = false,
                                      DataType destination = DataType::f32) {
  const dnnl::memory::desc src({rows, in}, data_type(precision), FormatTag::ab);
  const dnnl::memory::desc dst({rows, out}, destination, FormatTag::ab);
  const dnnl::memory::desc bias =
      has_bias ? dnnl::memory::desc({1, out}, DataType::f32, FormatTag::ab) : dnnl::memory::desc();
  dnnl::post_ops post_ops;
  if (accumulate) post_ops.append_sum(1.0F);
  if (activation == Activation::gelu) post_ops.append_eltwise(dnnl::algorithm::eltwise_gelu_erf, 0.0F, 0.0F);
  dnnl::primitive_attr attributes;
  attributes.set_post_ops(post_ops);
  // Scratch space from the caller (per calling thread, see run): oneDNN's own "library" scratchpad is
  // one buffer shared by every primitive, which two threads running matmuls at once (a
  // backend::cpu::Team) corrupted, and it is freed after each call, so every call faulted fresh pages in.
  attributes.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return {cpu_engine(), src, weights, bias, dst, attributes};
}

// Primitives for one (M, K, N, precision, bias, activation, accumulate, destination type) are shared by every
// layer of that shape: a 6-layer encoder needs 4 primitives per M, not 24. The thread count is part of the key
// because brgemm fixes its work split when the primitive is created: one built for 1 thread stays on 1 thread.
using PrimitiveKey = std::tuple<dnnl::memory::dim, dnnl::memory::dim, dnnl::memory::dim, Precision, bool, Activation,
                                bool, DataType, int>;

struct SharedPrimitive {
  dnnl::matmul matmul;
  dnnl::memory::desc scratchpad;
};

SharedPrimitive shared_primitive(const PrimitiveKey& key, const dnnl::memory::desc& weights) {
  static std::mutex mutex;
  static std::map<PrimitiveKey, SharedPrimitive> primitives;
  const std::lock_guard lock(mutex);
  const auto found = primitives.find(key);
  if (found != primitives.end()) return found->second;
  const auto [rows, in, out, precision, has_bias, activation, accumulate, destination, threads] = key;
  try {
    const auto description = describe(rows, in, out, precision, has_bias, weights, activation, accumulate, destination);
    SharedPrimitive primitive{dnnl::matmul(description), description.scratchpad_desc()};
    primitives.emplace(key, primitive);
    return primitive;
  } catch (const dnnl::error& error) {
    fail("creating a matmul primitive", error);
  }
}

// Below these multiply-accumulate counts a matmul runs on the calling thread alone (its primitive
// built for 1 thread, so oneDNN opens no parallel region): about 50 µs of work, which a second
// thread cannot save once waking it is paid for (a futex wake-up of tens of µs with
// OMP_WAIT_POLICY=passive, s1serve's default; a stall when the other core is busy). At one
// 128-token sequence this keeps the bf16 384→384 attention output projection (19 M MACs) on one
// thread; every fp32 MiniLM GEMM at that size is above its limit.
constexpr std::int64_t max_serial_macs_bf16 = 24'000'000;
constexpr std::int64_t max_serial_macs_fp32 = 5'000'000;

// bf16 layers on AMX CPUs run our kernel (x86/linear_amx_bf16) instead of oneDNN 3.2's brgemm: at every
// shape our models run it measured as fast or faster, most at MiniLM's small shapes (1.2–1.5× at
// M = 64 and 128 on one thread) and on whole passes with cold weights (Qwen3-0.6B's layer matmuls
// 1.3–1.5×, ModernBERT-large's 1.2×); docs/benchmarks/kernels.md, "Our AMX matmul". oneDNN stays for
// fp32 and for CPUs without AMX.
bool own_amx_kernel(Precision precision) { return precision == Precision::bf16 && cpu_features().amx_with_bf16(); }

// The bf16 copy of the activations lives per calling thread, reused across calls.
std::vector<Bf16Bits>& activation_buffer() {
  thread_local std::vector<Bf16Bits> buffer;
  return buffer;
}

}  // namespace

std::size_t padded_row_count(std::size_t rows) {
  const std::size_t granularity = std::max<std::size_t>(16, std::bit_ceil(rows) / 8);
  return (rows + granularity - 1) / granularity * granularity;
}

bool linear_supported(Precision precision) {
  // oneDNN's bf16 matmul needs at least AVX-512 (it uses AMX when present).
  return precision == Precision::fp32 || cpu_features().avx512();
}

Precision preferred_linear_precision() {
  // AVX-512 without BF16 (oneDNN's AVX512_CORE): a Qwen3-0.6B 256-token prefill took 12.3 s in bf16
  // against 4.4 s in fp32.
  return cpu_features().avx512_with_bf16() ? Precision::bf16 : Precision::fp32;
}

namespace {

struct FreeDeleter {
  void operator()(std::byte* data) const { std::free(data); }
};

// Storage for packed weights, on transparent huge pages where a matrix spans some (this system's
// THP mode is "madvise": plain allocations stay on 4 KiB pages). A forward pass streams every
// layer's weights from memory once, and on 4 KiB pages that streaming measured slow (TLB reach, we
// assume: this VM exposes no counters to confirm it). bench/kernels_bench.cpp: linear_forward_cold
// 2.5x faster, the 140 GEMMs of a ModernBERT-large pass (modernbert_large_gemms) 7-16% faster
// (docs/benchmarks/kernels.md).
std::unique_ptr<std::byte, FreeDeleter> weight_allocation(std::size_t bytes) {
  constexpr std::size_t huge_page = std::size_t{2} << 20;
  constexpr std::size_t cache_line = 64;
  void* data = nullptr;
  if (posix_memalign(&data, bytes >= huge_page ? huge_page : cache_line, bytes) != 0) throw std::bad_alloc();
  // Only whole huge pages inside the block: the tail stays on small pages rather than over-allocating.
  if (bytes >= huge_page) madvise(data, bytes / huge_page * huge_page, MADV_HUGEPAGE);
  return std::unique_ptr<std::byte, FreeDeleter>(static_cast<std::byte*>(data));
}

// A matmul's scratch space (a oneDNN primitive's, or our AMX kernel's packed rows of x), per calling
// thread, grown to the largest any call asked for.
std::byte* scratchpad_buffer(std::size_t bytes) {
  constexpr std::size_t alignment = 64;
  thread_local std::unique_ptr<std::byte, FreeDeleter> buffer;
  thread_local std::size_t capacity = 0;
  if (bytes > capacity) {
    void* data = nullptr;
    if (posix_memalign(&data, alignment, bytes) != 0) throw std::bad_alloc();
    buffer.reset(static_cast<std::byte*>(data));
    capacity = bytes;
  }
  return buffer.get();
}

}  // namespace

struct PackedLinear::Impl {
  std::size_t in_features = 0;
  std::size_t out_features = 0;
  Precision precision = Precision::fp32;
  Activation activation = Activation::none;
  std::unique_ptr<std::byte, FreeDeleter> weight_storage;  // owns what `weights` points to
  dnnl::memory weights;                                    // packed, in the layout the primitives expect
  dnnl::memory bias;                                       // empty handle when there is no bias
  // Instead of the above when our AMX kernel runs the layer (own_amx_kernel): its packed weights.
  std::unique_ptr<std::byte, FreeDeleter> amx_storage;
  std::optional<x86::AmxWeightLayout> amx;
  std::vector<float> amx_bias;
  // Instead of all of the above for a quantised weight.
  std::unique_ptr<QuantizedMatrix> quantized;
  void run_amx(const void* x, bool x_fp32, std::size_t rows, Destination y, bool accumulate) const;
};

PackedLinear::PackedLinear(std::span<const float> weight, std::span<const float> bias, std::size_t in_features,
                           std::size_t out_features, Precision precision, Activation activation)
    : impl_(std::make_unique<Impl>()) {
  assert(in_features > 0 && out_features > 0 && weight.size() == in_features * out_features);
  assert(bias.empty() || bias.size() == out_features);
  assert(linear_supported(precision));
  impl_->in_features = in_features;
  impl_->out_features = out_features;
  impl_->precision = precision;
  impl_->activation = activation;
  if (own_amx_kernel(precision)) {
    const x86::AmxWeightLayout layout(in_features, out_features);
    impl_->amx_storage = weight_allocation(layout.values() * sizeof(Bf16Bits));
    x86::pack_weights_amx_bf16(weight, layout,
                               {reinterpret_cast<Bf16Bits*>(impl_->amx_storage.get()), layout.values()});
    impl_->amx = layout;
    impl_->amx_bias.assign(bias.begin(), bias.end());
    return;
  }
  const auto in = static_cast<dnnl::memory::dim>(in_features);
  const auto out = static_cast<dnnl::memory::dim>(out_features);
  try {
    const dnnl::memory::desc any_weights({in, out}, data_type(precision), FormatTag::any);
    const auto probe = describe(layout_probe_rows, in, out, precision, !bias.empty(), any_weights, activation);
    // nn.Linear's [N, K] row-major weight is the matmul's [K, N] operand with strides (1, K): "ba".
    const dnnl::memory::desc torch_layout({in, out}, DataType::f32, FormatTag::ba);
    dnnl::memory source(torch_layout, cpu_engine(), const_cast<float*>(weight.data()));
    impl_->weight_storage = weight_allocation(probe.weights_desc().get_size());
    impl_->weights = dnnl::memory(probe.weights_desc(), cpu_engine(), impl_->weight_storage.get());
    dnnl::stream stream(cpu_engine());
    apply_thread_count();
    dnnl::reorder(source, impl_->weights).execute(stream, source, impl_->weights);
    if (!bias.empty()) {
      impl_->bias = dnnl::memory({{1, out}, DataType::f32, FormatTag::ab}, cpu_engine());
      std::copy(bias.begin(), bias.end(), static_cast<float*>(impl_->bias.get_data_handle()));
    }
    stream.wait();
  } catch (const dnnl::error& error) {
    fail("packing weights", error);
  }
}

PackedLinear::PackedLinear(DType dtype, std::span<const std::byte> blocks, std::span<const float> bias,
                           std::size_t in_features, std::size_t out_features, Precision precision)
    : impl_(std::make_unique<Impl>()) {
  impl_->in_features = in_features;
  impl_->out_features = out_features;
  impl_->precision = precision;
  impl_->quantized = std::make_unique<QuantizedMatrix>(dtype, blocks, bias, in_features, out_features);
}

PackedLinear::~PackedLinear() = default;
PackedLinear::PackedLinear(PackedLinear&&) noexcept = default;
PackedLinear& PackedLinear::operator=(PackedLinear&&) noexcept = default;

std::size_t PackedLinear::in_features() const { return impl_->in_features; }
std::size_t PackedLinear::out_features() const { return impl_->out_features; }
Precision PackedLinear::precision() const { return impl_->precision; }

void PackedLinear::forward(std::span<const float> x, std::span<float> y) const {
  run_fp32(x, {y.data(), y.size(), Output::fp32}, false);
}

void PackedLinear::forward_accumulate(std::span<const float> x, std::span<float> y) const {
  assert(impl_->activation == Activation::none);
  run_fp32(x, {y.data(), y.size(), Output::fp32}, true);
}

void PackedLinear::forward(std::span<const Bf16Bits> x, std::span<float> y) const {
  assert(impl_->precision == Precision::bf16 && x.size() % impl_->in_features == 0);
  run(x.data(), x.size() / impl_->in_features, {y.data(), y.size(), Output::fp32}, false);
}

void PackedLinear::forward_accumulate(std::span<const Bf16Bits> x, std::span<float> y) const {
  assert(impl_->precision == Precision::bf16 && x.size() % impl_->in_features == 0);
  assert(impl_->activation == Activation::none);
  run(x.data(), x.size() / impl_->in_features, {y.data(), y.size(), Output::fp32}, true);
}

void PackedLinear::forward(std::span<const float> x, std::span<Bf16Bits> y) const {
  assert(impl_->precision == Precision::bf16);
  run_fp32(x, {y.data(), y.size(), Output::bf16}, false);
}

void PackedLinear::forward(std::span<const Bf16Bits> x, std::span<Bf16Bits> y) const {
  assert(impl_->precision == Precision::bf16 && x.size() % impl_->in_features == 0);
  run(x.data(), x.size() / impl_->in_features, {y.data(), y.size(), Output::bf16}, false);
}

void PackedLinear::run_fp32(std::span<const float> x, Destination y, bool accumulate) const {
  assert(x.size() % impl_->in_features == 0);
  const std::size_t rows = x.size() / impl_->in_features;
  if (impl_->quantized) {
    assert(y.size == rows * impl_->out_features);
    impl_->quantized->run(x.data(), false, rows, y.data, y.type == Output::bf16, accumulate);
    return;
  }
  if (impl_->precision == Precision::fp32) {
    run(x.data(), rows, y, accumulate);
    return;
  }
  if (impl_->amx) {
    assert(y.size == rows * impl_->out_features);
    impl_->run_amx(x.data(), true, rows, y, accumulate);
    return;
  }
  // oneDNN 3.2 has no f32-activation × bf16-weight matmul, so activations are rounded to bf16 first
  // (vcvtne2ps2bf16: ~1 µs per 128×384 rows, far below the matmul). Callers that can write bf16
  // themselves skip this pass with the Bf16Bits overloads.
  std::vector<Bf16Bits>& buffer = activation_buffer();
  buffer.resize(x.size());
  convert_fp32_to_bf16(x, buffer);
  run(buffer.data(), rows, y, accumulate);
}

void PackedLinear::Impl::run_amx(const void* x, bool x_fp32, std::size_t rows, Destination y, bool accumulate) const {
  const x86::AmxWeightLayout& layout = *amx;
  auto* packed_x =
      reinterpret_cast<Bf16Bits*>(scratchpad_buffer(x86::packed_rows_values(layout, rows) * sizeof(Bf16Bits)));
  x86::AmxLinearTask task{layout};
  task.weights = reinterpret_cast<const Bf16Bits*>(amx_storage.get());
  task.bias = amx_bias.empty() ? nullptr : amx_bias.data();
  task.x = packed_x;
  task.rows = rows;
  task.gelu = activation == Activation::gelu;
  task.accumulate = accumulate;
  task.y = y.data;
  task.y_bf16 = y.type == Output::bf16;
  // Packs rows [32·first_block, 32·end_block) of x.
  const auto pack = [&](std::size_t first_block, std::size_t end_block) {
    const std::size_t first_row = first_block * x86::amx_block_rows;
    const std::size_t count = std::min(rows, end_block * x86::amx_block_rows) - first_row;
    Bf16Bits* destination = packed_x + x86::packed_rows_values(layout, first_row);
    if (x_fp32) {
      x86::pack_rows_amx_bf16(static_cast<const float*>(x) + first_row * in_features, count, layout, destination);
    } else {
      x86::pack_rows_amx_bf16(static_cast<const Bf16Bits*>(x) + first_row * in_features, count, layout, destination);
    }
  };
  const std::size_t row_blocks = (rows + x86::amx_block_rows - 1) / x86::amx_block_rows;
  const auto macs = static_cast<std::int64_t>(rows * in_features * out_features);
  if (omp_in_parallel() != 0 || macs <= max_serial_macs_bf16) {
    pack(0, row_blocks);
    x86::linear_amx_bf16(task, 0, layout.panels);
    return;
  }
  // Each thread packs its share of the rows, then computes its share of the output columns from all of
  // them: it streams only its own panels of the weights.
  run_team([&](Team& team) {
    const Team::Range blocks = team.share(row_blocks);
    if (blocks.size() != 0) pack(blocks.begin, blocks.end);
    team.barrier();
    const Team::Range panels = team.share(layout.panels);
    x86::linear_amx_bf16(task, panels.begin, panels.end);
  });
}

void PackedLinear::run(const void* x, std::size_t rows, Destination y, bool accumulate) const {
  const Impl& impl = *impl_;
  assert(rows > 0 && y.size == rows * impl.out_features);
  if (impl.quantized) {
    impl.quantized->run(x, impl.precision == Precision::bf16, rows, y.data, y.type == Output::bf16, accumulate);
    return;
  }
  if (impl.amx) {
    impl.run_amx(x, false, rows, y, accumulate);
    return;
  }
  const DataType destination_type = y.type == Output::bf16 ? DataType::bf16 : DataType::f32;
  const auto m = static_cast<dnnl::memory::dim>(rows);
  const auto in = static_cast<dnnl::memory::dim>(impl.in_features);
  const auto out = static_cast<dnnl::memory::dim>(impl.out_features);
  const bool has_bias = static_cast<bool>(impl.bias);
  const std::int64_t macs = m * in * out;
  // Inside a parallel region (a backend::cpu::Team's thread working on its own rows) the matmul is that
  // thread's alone: a primitive for more threads would split it again across a nested region.
  const bool serial = omp_in_parallel() != 0 ||
                      macs <= (impl.precision == Precision::bf16 ? max_serial_macs_bf16 : max_serial_macs_fp32);
  const int threads = serial ? 1 : thread_count();
  try {
    // The primitive is created (brgemm fixes its work split then) and run with `threads` threads.
    if (serial) {
      omp_set_num_threads(1);
    } else {
      apply_thread_count();
    }
    const SharedPrimitive primitive =
        shared_primitive({m, in, out, impl.precision, has_bias, impl.activation, accumulate, destination_type, threads},
                         impl.weights.get_desc());
    const dnnl::memory source({{m, in}, data_type(impl.precision), FormatTag::ab}, cpu_engine(), const_cast<void*>(x));
    const dnnl::memory destination({{m, out}, destination_type, FormatTag::ab}, cpu_engine(), y.data);
    thread_local dnnl::stream stream(cpu_engine());
    std::unordered_map<int, dnnl::memory> arguments{
        {DNNL_ARG_SRC, source}, {DNNL_ARG_WEIGHTS, impl.weights}, {DNNL_ARG_DST, destination}};
    if (has_bias) arguments.emplace(DNNL_ARG_BIAS, impl.bias);
    if (const std::size_t bytes = primitive.scratchpad.get_size(); bytes != 0)
      arguments.emplace(DNNL_ARG_SCRATCHPAD,
                        dnnl::memory(primitive.scratchpad, cpu_engine(), scratchpad_buffer(bytes)));
    primitive.matmul.execute(stream, arguments);
    stream.wait();
  } catch (const dnnl::error& error) {
    fail("running a matmul", error);
  }
  if (serial) apply_thread_count();
}

}  // namespace s1::backend::cpu
