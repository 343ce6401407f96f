// Kernel micro-benchmarks at all-MiniLM-L6-v2 shapes (hidden 384, 12 heads × 32, FFN 1536).
// Run: s1_kernels_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// Times and FLOP/s are wall-clock (UseRealTime): OpenMP work on other threads does not show in the
// calling thread's CPU time.
// Results and commands: docs/benchmarks/kernels.md.

#include <benchmark/benchmark.h>

#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "backend/cpu/attention.h"
#include "backend/cpu/gelu.h"
#include "backend/cpu/layer_norm.h"
#include "backend/cpu/linear.h"
#include "backend/cpu/parallel.h"
#include "backend/cpu/softmax.h"
#include "backend/quant_blocks.h"

namespace s1::backend::cpu {
namespace {

std::vector<float> random_values(std::size_t count, float scale) {
  std::mt19937 generator(42);
  std::normal_distribution<float> normal(0.0F, scale);
  std::vector<float> values(count);
  for (float& value : values) value = normal(generator);
  return values;
}

void set_rate(benchmark::State& state, double flops_per_iteration) {
  state.counters["FLOP/s"] = benchmark::Counter(flops_per_iteration, benchmark::Counter::kIsIterationInvariantRate);
}

// Args: precision (0 fp32, 1 bf16), M, K, N, threads, gelu.
void linear_forward(benchmark::State& state) {
  const auto precision = state.range(0) == 0 ? Precision::fp32 : Precision::bf16;
  const auto rows = static_cast<std::size_t>(state.range(1));
  const auto in = static_cast<std::size_t>(state.range(2));
  const auto out = static_cast<std::size_t>(state.range(3));
  set_thread_count(static_cast<int>(state.range(4)));
  const auto activation = state.range(5) != 0 ? Activation::gelu : Activation::none;
  if (!linear_supported(precision)) {
    state.SkipWithError("precision not supported on this CPU");
    return;
  }
  const PackedLinear layer(random_values(in * out, 0.05F), random_values(out, 0.1F), in, out, precision, activation);
  const auto x = random_values(rows * in, 1.0F);
  std::vector<float> y(rows * out);
  layer.forward(x, y);  // builds the primitive for this M outside the timed loop
  for (auto _ : state) {
    layer.forward(x, y);
    benchmark::DoNotOptimize(y.data());
  }
  set_rate(state, 2.0 * static_cast<double>(rows * in * out));
}

void linear_arguments(benchmark::internal::Benchmark* benchmark) {
  benchmark->ArgNames({"bf16", "M", "K", "N", "threads", "gelu"});
  for (const int precision : {0, 1}) {
    for (const int threads : {1, 2}) {
      // The four MiniLM GEMMs of one layer at 128 tokens.
      for (const auto& [in, out] : {std::pair{384, 1152}, {384, 384}, {384, 1536}, {1536, 384}})
        benchmark->Args({precision, 128, in, out, threads, 0});
      benchmark->Args({precision, 128, 384, 1536, threads, 1});
    }
    // The same at 64 rows on one thread: each thread's share of a 128-token MiniLM forward in a team.
    for (const auto& [in, out] : {std::pair{384, 1152}, {384, 384}, {384, 1536}, {1536, 384}})
      benchmark->Args({precision, 64, in, out, 1, 0});
    benchmark->Args({precision, 64, 384, 1536, 1, 1});
    // Per-call latency at small and large row counts.
    for (const int threads : {1, 2})
      for (const int rows : {8, 32, 512}) benchmark->Args({precision, rows, 384, 1152, threads, 0});
    // The four ModernBERT-large (LAYA) GEMMs of one layer at 512 tokens.
    for (const int threads : {1, 2})
      for (const auto& [in, out] : {std::pair{1024, 3072}, {1024, 1024}, {1024, 2624}, {2624, 1024}})
        benchmark->Args({precision, 512, in, out, threads, 0});
  }
}
BENCHMARK(linear_forward)->Apply(linear_arguments)->UseRealTime()->Unit(benchmark::kMicrosecond);

// As linear_forward, but cycling through 200 MB of layers of the shape, as a model's forward pass
// does: the weights come from memory rather than from the cache a single repeated layer stays in.
// Arg bf16_io: 0 fp32 activations in and out, 1 bf16 in and out (a producer wrote them, a consumer
// reads them).
void linear_forward_cold(benchmark::State& state) {
  const auto precision = state.range(0) == 0 ? Precision::fp32 : Precision::bf16;
  const auto rows = static_cast<std::size_t>(state.range(1));
  const auto in = static_cast<std::size_t>(state.range(2));
  const auto out = static_cast<std::size_t>(state.range(3));
  set_thread_count(static_cast<int>(state.range(4)));
  std::vector<PackedLinear> layers;
  const std::size_t layer_count = std::max<std::size_t>(8, 100'000'000 / (in * out));
  for (std::size_t layer = 0; layer < layer_count; ++layer)
    layers.emplace_back(random_values(in * out, 0.05F), random_values(out, 0.1F), in, out, precision);
  const auto x = random_values(rows * in, 1.0F);
  std::vector<float> y(rows * out);
  std::vector<Bf16Bits> x_bf16(x.size()), y_bf16(y.size());
  convert_fp32_to_bf16(x, x_bf16);
  const bool bf16_io = state.range(5) != 0;
  const auto run = [&](const PackedLinear& layer) {
    if (bf16_io) {
      layer.forward(x_bf16, y_bf16);
    } else {
      layer.forward(x, y);
    }
  };
  run(layers[0]);
  std::size_t next = 0;
  for (auto _ : state) {
    run(layers[next]);
    next = (next + 1) % layers.size();
    benchmark::DoNotOptimize(y.data());
    benchmark::DoNotOptimize(y_bf16.data());
  }
  set_rate(state, 2.0 * static_cast<double>(rows * in * out));
}
// The GEMMs of a ModernBERT-large forward pass alone, layer after layer, no other op between them.
void modernbert_large_gemms(benchmark::State& state) {
  set_thread_count(static_cast<int>(state.range(1)));
  const std::size_t rows = static_cast<std::size_t>(state.range(0));
  struct Layer {
    PackedLinear qkv, out, wi, wg, wo;
  };
  std::vector<Layer> layers;
  for (int layer = 0; layer < 28; ++layer)
    layers.push_back(Layer{PackedLinear(random_values(1024 * 3072, 0.05F), {}, 1024, 3072, Precision::bf16),
                           PackedLinear(random_values(1024 * 1024, 0.05F), {}, 1024, 1024, Precision::bf16),
                           PackedLinear(random_values(1024 * 2624, 0.05F), {}, 1024, 2624, Precision::bf16),
                           PackedLinear(random_values(1024 * 2624, 0.05F), {}, 1024, 2624, Precision::bf16),
                           PackedLinear(random_values(1024 * 2624, 0.05F), {}, 2624, 1024, Precision::bf16)});
  const auto x = random_values(rows * 2624, 1.0F);
  std::vector<float> qkv(rows * 3072), hidden(rows * 1024), a(rows * 2624), g(rows * 2624);
  const std::span<const float> narrow(x.data(), rows * 1024);
  for (auto _ : state) {
    for (const Layer& layer : layers) {
      layer.qkv.forward(narrow, qkv);
      layer.out.forward(narrow, hidden);
      layer.wi.forward(narrow, a);
      layer.wg.forward(narrow, g);
      layer.wo.forward(x, hidden);
    }
    benchmark::DoNotOptimize(hidden.data());
  }
  set_rate(state, 2.0 * 28 * static_cast<double>(rows) * (1024.0 * 3072 + 1024.0 * 1024 + 3 * 1024.0 * 2624));
}
BENCHMARK(modernbert_large_gemms)
    ->ArgNames({"M", "threads"})
    ->Args({512, 2})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// The four matmuls of a Qwen3-0.6B layer (qkv 1024→4096, o 2048→1024 into the residual, gate|up
// 1024→6144, down 3072→1024 into the residual) at M rows, bf16 activations in, through 28 layers
// (cold weights), nothing between them; weights bf16 (oneDNN, or our AMX kernel) or kept quantised,
// q8_0 or q4_k (one layer's blocks, quantised once, packed 28 times).
void qwen3_layer_gemms(benchmark::State& state) {
  const auto rows = static_cast<std::size_t>(state.range(0));
  set_thread_count(static_cast<int>(state.range(1)));
  const auto weights = static_cast<int>(state.range(2));
  constexpr std::size_t hidden = 1024, q_width = 2048, qkv_width = 4096, inner = 3072;
  struct Layer {
    PackedLinear qkv, o, gate_up, down;
  };
  const auto matrix = [&](std::size_t in, std::size_t out) {
    if (weights == 0) return PackedLinear(random_values(in * out, 0.05F), {}, in, out, Precision::bf16);
    const s1::backend::DType dtype = weights == 1 ? s1::backend::DType::q8_0 : s1::backend::DType::q4_k;
    static std::map<std::tuple<int, std::size_t, std::size_t>, std::vector<std::byte>> quantized;
    auto& blocks = quantized[{weights, in, out}];
    if (blocks.empty()) {
      blocks.resize(out * s1::backend::storage_bytes(dtype, in));
      s1::backend::quant::quantize_row(dtype, random_values(in * out, 0.05F).data(), in * out, blocks.data());
    }
    return PackedLinear(dtype, blocks, {}, in, out, Precision::bf16);
  };
  std::vector<Layer> layers;
  for (int layer = 0; layer < 28; ++layer)
    layers.push_back(
        Layer{matrix(hidden, qkv_width), matrix(q_width, hidden), matrix(hidden, 2 * inner), matrix(inner, hidden)});
  std::vector<Bf16Bits> x(rows * inner), gate_up(rows * 2 * inner);
  convert_fp32_to_bf16(random_values(rows * inner, 1.0F), x);
  const std::span<const Bf16Bits> normed(x.data(), rows * hidden), context(x.data(), rows * q_width);
  std::vector<float> qkv(rows * qkv_width), residual(rows * hidden);
  const auto pass = [&] {
    for (const Layer& layer : layers) {
      layer.qkv.forward(normed, qkv);
      layer.o.forward_accumulate(context, residual);
      layer.gate_up.forward(normed, gate_up);
      layer.down.forward_accumulate(x, residual);
    }
  };
  pass();  // builds any matmul primitives outside the timed loop
  for (auto _ : state) {
    pass();
    benchmark::DoNotOptimize(residual.data());
  }
  set_rate(state, 2.0 * 28 * static_cast<double>(rows) *
                      static_cast<double>(hidden * qkv_width + q_width * hidden + hidden * 2 * inner + inner * hidden));
}
BENCHMARK(qwen3_layer_gemms)
    ->ArgNames({"M", "threads", "weights"})
    ->ArgsProduct({{256}, {2}, {0, 1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

BENCHMARK(linear_forward_cold)
    ->ArgNames({"bf16", "M", "K", "N", "threads", "bf16_io"})
    ->ArgsProduct({{1}, {512}, {1024}, {3072, 2624, 512}, {2}, {0, 1}})
    ->Args({1, 512, 2624, 1024, 2, 0})
    ->Args({1, 512, 2624, 1024, 2, 1})
    ->Args({1, 256, 1024, 6144, 2, 0})
    ->Args({1, 256, 1024, 6144, 2, 1})
    ->Args({1, 64, 1024, 6144, 2, 1})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// Args: bf16, batch, seq, threads.
void attention_minilm(benchmark::State& state) {
  const auto precision = state.range(0) == 0 ? Precision::fp32 : Precision::bf16;
  const AttentionShape shape{.batch = static_cast<std::size_t>(state.range(1)),
                             .seq = static_cast<std::size_t>(state.range(2)),
                             .heads = 12,
                             .kv_heads = 12,
                             .head_dim = 32};
  set_thread_count(static_cast<int>(state.range(3)));
  const auto qkv = random_values(shape.batch * shape.seq * shape.qkv_width(), 1.0F);
  const std::vector<std::size_t> lengths(shape.batch, shape.seq);
  std::vector<float> out(shape.batch * shape.seq * shape.out_width());
  for (auto _ : state) {
    attention(qkv, lengths, shape, false, out, precision);
    benchmark::DoNotOptimize(out.data());
  }
  // Q·Kᵀ and P·V, two multiply-adds per (query, key, channel).
  set_rate(state, 4.0 * static_cast<double>(shape.batch * shape.heads * shape.seq * shape.seq * shape.head_dim));
}
void attention_arguments(benchmark::internal::Benchmark* benchmark) {
  benchmark->ArgNames({"bf16", "batch", "seq", "threads"});
  for (const int precision : {0, 1}) {
    benchmark->Args({precision, 1, 128, 1});
    benchmark->Args({precision, 1, 128, 2});
    benchmark->Args({precision, 8, 128, 2});
    benchmark->Args({precision, 1, 256, 2});
  }
}
BENCHMARK(attention_minilm)->Apply(attention_arguments)->UseRealTime()->Unit(benchmark::kMicrosecond);

// ModernBERT-large's attention in bf16 as LAYA runs it: 4 questions, 16 heads of 64, global or
// local (a ±64 sliding window). Args: seq, half_window. Rate counts the work a global layer does.
void attention_modernbert_large(benchmark::State& state) {
  const AttentionShape shape{.batch = 4,
                             .seq = static_cast<std::size_t>(state.range(0)),
                             .heads = 16,
                             .kv_heads = 16,
                             .head_dim = 64,
                             .window = static_cast<std::size_t>(state.range(1))};
  set_thread_count(2);
  const auto qkv = random_values(shape.batch * shape.seq * shape.qkv_width(), 1.0F);
  const std::vector<std::size_t> lengths(shape.batch, shape.seq);
  std::vector<float> out(shape.batch * shape.seq * shape.out_width());
  for (auto _ : state) {
    attention(qkv, lengths, shape, false, out, Precision::bf16);
    benchmark::DoNotOptimize(out.data());
  }
  set_rate(state, 4.0 * static_cast<double>(shape.batch * shape.heads * shape.seq * shape.seq * shape.head_dim));
}
BENCHMARK(attention_modernbert_large)
    ->ArgNames({"seq", "half_window"})
    ->Args({128, 0})
    ->Args({128, 64})
    ->Args({512, 0})
    ->Args({512, 64})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// Args: rows, threads.
void add_layer_norm_minilm(benchmark::State& state) {
  const auto rows = static_cast<std::size_t>(state.range(0));
  set_thread_count(static_cast<int>(state.range(1)));
  const auto x = random_values(rows * 384, 1.0F);
  const auto residual = random_values(rows * 384, 1.0F);
  const auto gamma = random_values(384, 1.0F);
  const auto beta = random_values(384, 1.0F);
  std::vector<float> y(rows * 384);
  for (auto _ : state) {
    add_layer_norm(x, residual, gamma, beta, 1e-12F, y);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(rows * 384));
}
BENCHMARK(add_layer_norm_minilm)
    ->ArgNames({"rows", "threads"})
    ->Args({128, 1})
    ->Args({128, 2})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

void gelu_minilm(benchmark::State& state) {
  const auto rows = static_cast<std::size_t>(state.range(0));
  set_thread_count(static_cast<int>(state.range(1)));
  const auto x = random_values(rows * 1536, 2.0F);
  std::vector<float> y(x.size());
  for (auto _ : state) {
    gelu(x, y);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(x.size()));
}
BENCHMARK(gelu_minilm)
    ->ArgNames({"rows", "threads"})
    ->Args({128, 1})
    ->Args({128, 2})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

void softmax_rows(benchmark::State& state) {
  const auto rows = static_cast<std::size_t>(state.range(0));
  const auto columns = static_cast<std::size_t>(state.range(1));
  set_thread_count(2);
  const auto x = random_values(rows * columns, 3.0F);
  std::vector<float> y(x.size());
  for (auto _ : state) {
    softmax(x, columns, y);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(x.size()));
}
BENCHMARK(softmax_rows)
    ->ArgNames({"rows", "columns"})
    ->Args({12 * 128, 128})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// The kernel sequence of the six MiniLM encoder layers (no embeddings, no pooling): what the
// kernels alone cost a 128-token forward pass. Args: precision, tokens, threads.
void minilm_encoder_kernels(benchmark::State& state) {
  const auto precision = state.range(0) == 0 ? Precision::fp32 : Precision::bf16;
  const auto tokens = static_cast<std::size_t>(state.range(1));
  set_thread_count(static_cast<int>(state.range(2)));
  constexpr std::size_t hidden = 384, ffn = 1536, layers = 6;
  struct Layer {
    PackedLinear qkv, output, up, down;
    std::vector<float> gamma1, beta1, gamma2, beta2;
  };
  std::vector<Layer> model;
  for (std::size_t l = 0; l < layers; ++l) {
    model.push_back(Layer{
        PackedLinear(random_values(3 * hidden * hidden, 0.05F), random_values(3 * hidden, 0.1F), hidden, 3 * hidden,
                     precision),
        PackedLinear(random_values(hidden * hidden, 0.05F), random_values(hidden, 0.1F), hidden, hidden, precision),
        PackedLinear(random_values(ffn * hidden, 0.05F), random_values(ffn, 0.1F), hidden, ffn, precision,
                     Activation::gelu),
        PackedLinear(random_values(hidden * ffn, 0.05F), random_values(hidden, 0.1F), ffn, hidden, precision),
        random_values(hidden, 1.0F), random_values(hidden, 1.0F), random_values(hidden, 1.0F),
        random_values(hidden, 1.0F)});
  }
  const AttentionShape shape{.batch = 1, .seq = tokens, .heads = 12, .kv_heads = 12, .head_dim = 32};
  const std::vector<std::size_t> lengths{tokens};
  auto h = random_values(tokens * hidden, 1.0F);
  std::vector<float> qkv(tokens * 3 * hidden), context(tokens * hidden), projected(tokens * hidden),
      intermediate(tokens * ffn);
  const auto run = [&] {
    for (const Layer& layer : model) {
      layer.qkv.forward(h, qkv);
      attention(qkv, lengths, shape, false, context, precision);
      layer.output.forward(context, projected);
      add_layer_norm(projected, h, layer.gamma1, layer.beta1, 1e-12F, h);
      layer.up.forward(h, intermediate);
      layer.down.forward(intermediate, projected);
      add_layer_norm(projected, h, layer.gamma2, layer.beta2, 1e-12F, h);
    }
  };
  run();
  for (auto _ : state) {
    run();
    benchmark::DoNotOptimize(h.data());
  }
  const double linear_flops = 2.0 * tokens * layers * (hidden * 3 * hidden + hidden * hidden + 2 * hidden * ffn);
  const double attention_flops = 4.0 * layers * 12 * tokens * tokens * 32;
  set_rate(state, linear_flops + attention_flops);
}
BENCHMARK(minilm_encoder_kernels)
    ->ArgNames({"bf16", "tokens", "threads"})
    ->Args({0, 128, 2})
    ->Args({1, 128, 1})
    ->Args({1, 128, 2})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace s1::backend::cpu

BENCHMARK_MAIN();
