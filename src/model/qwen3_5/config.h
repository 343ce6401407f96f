#pragma once
// The Qwen3.5 / Qwen3.8 hybrid decoder's settings, read strictly from config.json: either a text
// config (model_type "qwen3_5_text", Qwen3_5ForCausalLM) or the multimodal wrapper (model_type
// "qwen3_5", Qwen3_5ForConditionalGeneration) whose text_config is read and whose vision settings
// are skipped. Anything that would change the text maths and is not implemented (rope scaling,
// biases, other activations, a non-fp32 GDN state, MoE layers) is a LoadError naming file and key.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "model/checkpoint/config_reader.h"

namespace s1::qwen3_5 {

struct Qwen35Config {
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;
  int64_t rotary_dim = 0;  // head_dim · partial_rotary_factor: RoPE on the first rotary_dim dims only
  // M-RoPE: how many rotary frequencies take the temporal, height and width position, interleaved
  // (frequency j: height when j % 3 == 1 and j < 3·section[1], width when j % 3 == 2 and
  // j < 3·section[2], temporal otherwise), Transformers' default when the config gives none.
  std::vector<int64_t> mrope_section = {11, 11, 10};
  double rope_theta = 0.0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  // Gated DeltaNet (linear-attention) layers.
  int64_t linear_conv_kernel_dim = 0;
  int64_t linear_key_head_dim = 0;
  int64_t linear_value_head_dim = 0;
  int64_t linear_num_key_heads = 0;
  int64_t linear_num_value_heads = 0;
  // Per layer: true for gated full attention, false for Gated DeltaNet.
  std::vector<bool> full_attention;
  bool tie_word_embeddings = false;
  // Read from a Qwen3_5ForConditionalGeneration wrapper (weights under model.language_model.).
  bool multimodal_wrapper = false;
  // The wrapper's image placeholder token (whose embeddings the vision features replace); −1 for a
  // text config or a placeholder outside the vocabulary.
  int64_t image_token_id = -1;
};

Qwen35Config read_qwen3_5_config(const std::filesystem::path& config_file);
// The same checks over any config source (a GGUF file's metadata: checkpoint/gguf_config.h).
Qwen35Config read_qwen3_5_config(checkpoint::ConfigReader root);

}  // namespace s1::qwen3_5
