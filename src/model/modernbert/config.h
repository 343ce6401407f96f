#pragma once
// The ModernBERT family's settings (ModernBERT, mmBERT and checkpoints built on them), read
// strictly from config.json in either the Transformers 4 spelling (global_attn_every_n_layers,
// global_rope_theta, local_rope_theta) or the Transformers 5 one (layer_types, rope_parameters per
// layer type). Any setting the family does not implement is a LoadError naming the file and key.

#include <cstdint>
#include <filesystem>
#include <vector>

#include "model/checkpoint/config_reader.h"

namespace s1::modernbert {

enum class LayerType { global, local };

struct ModernBertConfig {
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t max_position_embeddings = 0;
  double norm_eps = 1e-5;
  bool norm_bias = false;       // LayerNorms carry a bias
  bool attention_bias = false;  // Wqkv and attention Wo carry biases
  bool mlp_bias = false;        // Wi and mlp Wo carry biases
  int64_t local_attention = 128;  // the whole local window; a query sees keys within half of it
  double global_rope_theta = 160000.0;
  double local_rope_theta = 10000.0;
  std::vector<LayerType> layer_types;  // one per layer

  int64_t head_dim() const { return hidden_size / num_attention_heads; }
  // Query i of a local layer attends to keys j with |i − j| ≤ this (Transformers' sliding_window).
  int64_t local_half_window() const { return local_attention / 2; }
};

// Reads every member of a ModernBERT config object and finishes the reader (unknown keys are load
// errors). Exposed for configs nested in another file.
ModernBertConfig read_modernbert_config(checkpoint::ConfigReader& reader);
ModernBertConfig read_modernbert_config(const std::filesystem::path& config_file);

}  // namespace s1::modernbert
