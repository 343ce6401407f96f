#pragma once
// The BERT family's settings, read strictly: config.json (the encoder) and the sentence-transformers
// files around it (modules.json, 1_Pooling/config.json, sentence_bert_config.json). Any setting the
// family does not implement is a LoadError naming the file and the key, never silently ignored.

#include <cstdint>
#include <filesystem>

#include "model/checkpoint/config_reader.h"

namespace s1::bert {

struct BertConfig {
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t intermediate_size = 0;
  int64_t max_position_embeddings = 0;
  int64_t type_vocab_size = 2;
  double layer_norm_eps = 1e-12;

  int64_t head_dim() const { return hidden_size / num_attention_heads; }
};

// config.json of a BertModel: absolute position embeddings, exact GELU, encoder only.
BertConfig read_bert_config(const std::filesystem::path& config_file);
BertConfig read_bert_config(checkpoint::ConfigReader& reader);

// What sentence-transformers does after the encoder. Only the pipeline Transformer → Pooling(mean)
// → [Normalize] is implemented; other modules or pooling modes are load errors.
struct SentencePipeline {
  int64_t max_seq_length = 0;  // tokens including [CLS]/[SEP]; longer texts are truncated
  bool normalize = false;      // a Normalize module follows the pooling
  int64_t embedding_dimension = 0;
};

// Reads modules.json and the module configs of a sentence-transformers model directory (a missing
// modules.json is a LoadError: embeddings are defined by that pipeline, not guessed).
SentencePipeline read_sentence_pipeline(const std::filesystem::path& model_dir, const BertConfig& config);

}  // namespace s1::bert
