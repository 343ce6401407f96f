#pragma once
// The LFM2 family's settings (Lfm2ForCausalLM), read strictly from config.json. The layer pattern
// comes from "layer_types" ("conv" / "full_attention") or, in the original LFM2 spelling, from
// "full_attn_idxs"; the MLP width from "intermediate_size" or "block_ff_dim", adjusted as
// Transformers' Lfm2MLP does. Anything that would change the maths and is not implemented (rope
// scaling, a non-SwiGLU block, mismatched block widths) is a LoadError naming the file and key.

#include <cstdint>
#include <filesystem>
#include <vector>

#include "model/checkpoint/config_reader.h"

namespace s1::lfm2 {

struct Lfm2Config {
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;  // the MLP's real width (w1/w3 rows), after Lfm2MLP's adjustment
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;
  int64_t max_position_embeddings = 0;
  int64_t conv_kernel = 0;  // conv_L_cache
  bool conv_bias = false;   // biases of in_proj, the conv and out_proj
  double norm_eps = 1e-5;
  double rope_theta = 0.0;
  bool tie_word_embeddings = true;
  std::vector<bool> full_attention;  // per layer: attention (true) or gated short conv (false)
};

Lfm2Config read_lfm2_config(const std::filesystem::path& config_file);
// The same checks over any config source (a GGUF file's metadata: checkpoint/gguf_config.h).
Lfm2Config read_lfm2_config(checkpoint::ConfigReader reader);

}  // namespace s1::lfm2
