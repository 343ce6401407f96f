#pragma once
// The dense Qwen3 family (Qwen3ForCausalLM) as a decoder::CausalDecoder: pre-norm decoder layers with
// grouped-query attention (per-head RMSNorm on q and k, rotate-half RoPE) and a SwiGLU MLP.

#include <filesystem>
#include <memory>

#include "backend/cpu/precision.h"
#include "model/decoder/causal_decoder.h"

namespace s1::qwen3 {

// Reads dir/config.json (strictly) and the checkpoint in dir (model.safetensors or a sharded index),
// checking every weight's shape. Weights may carry the "model." prefix (Qwen3ForCausalLM) or not
// (a bare Qwen3Model, which then needs tied embeddings). `dir` may also be a GGUF file of
// architecture qwen3 (config from its metadata). Throws checkpoint::LoadError.
[[nodiscard]] std::unique_ptr<decoder::CausalDecoder> load_qwen3(const std::filesystem::path& dir,
                                                                 backend::cpu::Precision precision);

}  // namespace s1::qwen3
