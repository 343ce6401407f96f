#pragma once
// The Qwen3.5 / Qwen3.8 hybrid decoder (Gated DeltaNet + gated full attention, models.md §2.A) behind
// the family-agnostic decoder::CausalDecoder interface.

#include <filesystem>
#include <memory>

#include "backend/cpu/precision.h"
#include "model/decoder/causal_decoder.h"
#include "model/decoder/lora_adapter.h"

namespace s1::qwen3_5 {

// Where output rows come from: the checkpoint's LM head (or its tied embedding table), or nowhere for
// a headless backbone (a bare Qwen3_5Model saved beside its own readout matrix: D3, pplx-decider),
// whose lm_head() throws std::logic_error and whose checkpoint must not hold an lm_head.weight.
enum class OutputHead { lm_head, none };

// Loads config.json + model.safetensors (or a sharded index) from `dir`: a text checkpoint
// (Qwen3_5ForCausalLM, weights under "model."), the text part of a multimodal one
// (Qwen3_5ForConditionalGeneration, weights under "model.language_model.") or a bare Qwen3_5Model
// (weights under "language_model.", with OutputHead::none); vision weights ("model.visual.",
// "visual.") are skipped with a log line (qwen3_5_vision::VisionTower loads them). A multimodal
// checkpoint's branches may carry images (decoder::Branch::images: the tower's rows at runs of its
// image_token_id), rotated by M-RoPE on their grids. Multi-token-prediction weights ("mtp.*") are ignored; any other tensor
// the family does not use is a LoadError, as is a missing one or a wrong shape. `dir` may also be a
// GGUF file of architecture qwen35 (config from its metadata, tensors as checkpoint/gguf_weights.h
// gives them).
//
// Linear layers run at `precision` (PackedLinear); activations, attention and the GDN state stay fp32.
//
// noncausal_full_attention: full-attention layers attend bidirectionally within each sequence while
// GDN layers stay causal (D3, pplx-decider). Earlier positions then depend on later tokens, so a
// prefix state cannot be reused: forward() with a prefix throws std::invalid_argument.
//
// lora: a PEFT adapter applied unmerged (every adapted projection adds its fp32 low-rank term at run
// time); every one of its pairs must adapt a text-decoder projection, else a LoadError.
std::unique_ptr<decoder::CausalDecoder> load_qwen3_5(const std::filesystem::path& dir,
                                                     backend::cpu::Precision precision,
                                                     bool noncausal_full_attention = false,
                                                     OutputHead head = OutputHead::lm_head,
                                                     const decoder::LoraAdapter* lora = nullptr);

}  // namespace s1::qwen3_5
