#pragma once
// A sentence-transformers model directory served natively: tokenizer.json → BERT encoder → mean
// pooling → L2 normalise (when the pipeline has a Normalize module), as modules.json declares.
// Texts longer than max_seq_length tokens are truncated, as sentence-transformers does.

#include "backend/cpu/precision.h"
#include "model/bert/bert_model.h"
#include "model/bert/config.h"
#include "text/tokenizer.h"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

namespace s1::bert {

class SentenceEncoder {
 public:
  // Throws checkpoint::LoadError (config, weights, pipeline) or text::TokenizerLoadError.
  static SentenceEncoder open(const std::filesystem::path& model_dir, backend::cpu::Precision precision);

  // Token ids the encoder sees for `text`: [CLS] … [SEP], truncated to max_seq_length.
  // Thread-safe (const, no scratch).
  text::Encoding tokenize(std::string_view text) const;

  // Pooled (and normalised) embeddings of each sequence, row-major [sequences.size(), dimension()].
  // Batch composition changes nothing but rounding (packed batches, no padding). Large inputs run in
  // several forward passes of at most max_batch_tokens tokens each. Not thread-safe (scratch).
  std::vector<float> embed(std::span<const std::vector<int32_t>> sequences);
  std::vector<float> embed(std::span<const std::span<const int32_t>> sequences);

  size_t dimension() const { return static_cast<size_t>(pipeline_.embedding_dimension); }
  int64_t max_seq_length() const { return pipeline_.max_seq_length; }
  bool normalizes() const { return pipeline_.normalize; }
  backend::cpu::Precision precision() const { return encoder_->precision(); }
  const BertConfig& config() const { return encoder_->config(); }
  const text::Tokenizer& tokenizer() const { return *tokenizer_; }

  // Tokens per forward pass: bounds the activations (~14 KB per token for MiniLM) whatever the batch.
  static constexpr size_t max_batch_tokens = 8192;

 private:
  SentenceEncoder(std::unique_ptr<text::Tokenizer> tokenizer, std::unique_ptr<BertEncoder> encoder,
                  SentencePipeline pipeline);

  std::unique_ptr<text::Tokenizer> tokenizer_;
  std::unique_ptr<BertEncoder> encoder_;
  SentencePipeline pipeline_;
};

}  // namespace s1::bert
