#pragma once

// Plain scalar fp32 implementations: the definition of each op that every optimised variant is
// tested against. Written for clarity, not speed.

#include <cstddef>
#include <span>
#include <vector>

#include "backend/cpu/attention.h"
#include "backend/cpu/linear.h"
#include "backend/cpu/variants.h"

namespace s1::backend::cpu::reference {

void layer_norm(std::span<const float> x, std::span<const float> residual, std::span<const float> gamma,
                std::span<const float> beta, float eps, std::span<float> y);
void gelu(std::span<const float> x, std::span<float> y);
void gelu_mul(std::span<const float> x, std::span<const float> gate, std::span<float> y);
void gelu_mul_bf16(std::span<const Bf16Bits> x, std::span<const Bf16Bits> gate, std::span<float> y);
void softmax(std::span<const float> x, std::size_t columns, std::span<float> y);
void convert_fp32_to_bf16(std::span<const float> x, std::span<Bf16Bits> y);
void attention_head(const AttentionHeadTask& task);
// A task with bf16 inputs (AttentionHeadTask::q_bf16…) as the same task over fp32 rows widened into
// storage, for the variants that read fp32 only; other tasks are returned as they are.
AttentionHeadTask widen_bf16_inputs(const AttentionHeadTask& task, std::vector<float>& storage);
void mean_pool(std::span<const float> hidden, std::span<const std::size_t> lengths, std::size_t seq,
               std::span<float> out);
void l2_normalize(std::span<const float> x, std::size_t columns, std::span<float> y);
void quantized_matmul(const QuantizedMatmulTask& task, std::size_t tile_begin, std::size_t tile_end);
void quantize_row(const float* x, std::size_t width, std::int8_t* q, float* scales, float* sums,
                  std::int32_t* q_sums);

// y[M,N] = activation(x[M,K] · weightᵀ + bias), weight [N,K] row-major (nn.Linear), bias [N] or
// empty, accumulated in double so it can judge both fp32 and bf16 results.
void linear(std::span<const float> x, std::span<const float> weight, std::span<const float> bias,
            std::size_t in_features, std::size_t out_features, Activation activation, std::span<float> y);

}  // namespace s1::backend::cpu::reference
