#pragma once
// The dense Qwen3 family's settings (Qwen3ForCausalLM), read strictly from config.json: any setting
// that would change the maths and is not implemented (rope scaling, sliding windows, attention
// biases, other activations) is a LoadError naming the file and key.

#include <cstdint>
#include <filesystem>

#include "model/checkpoint/config_reader.h"

namespace s1::qwen3 {

struct Qwen3Config {
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;  // independent of hidden_size / num_attention_heads in Qwen3
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 0.0;
  bool tie_word_embeddings = false;
};

Qwen3Config read_qwen3_config(const std::filesystem::path& config_file);
// The same checks over any config source (a GGUF file's metadata: checkpoint/gguf_config.h).
Qwen3Config read_qwen3_config(checkpoint::ConfigReader reader);

}  // namespace s1::qwen3
