#pragma once
// The LFM2 hybrid family (Lfm2ForCausalLM) as a decoder::CausalDecoder: pre-norm layers that mix the
// sequence either by a gated short convolution (in_proj → B, C, x; C ⊙ causal depthwise conv(B ⊙ x);
// out_proj) or by grouped-query attention with per-head q/k RMSNorm and rotate-half RoPE, each
// followed by a SwiGLU MLP; a final RMSNorm and (usually tied) LM head.
//
// A sequence state holds the attention layers' keys/values and each conv layer's last
// conv_L_cache − 1 gated inputs, so branches continue a prefix exactly.

#include <filesystem>
#include <memory>

#include "backend/cpu/precision.h"
#include "model/decoder/causal_decoder.h"

namespace s1::lfm2 {

// Reads dir/config.json (strictly) and the checkpoint in dir (model.safetensors or a sharded
// index), checking every weight's shape and that no tensor is left unused. Weights may carry the
// "model." prefix (Lfm2ForCausalLM) or not (a bare Lfm2Model, which then needs tied embeddings).
// `dir` may also be a GGUF file of architecture lfm2 (config from its metadata). Throws
// checkpoint::LoadError.
[[nodiscard]] std::unique_ptr<decoder::CausalDecoder> load_lfm2(const std::filesystem::path& dir,
                                                                backend::cpu::Precision precision);

}  // namespace s1::lfm2
