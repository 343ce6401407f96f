#include "model/bert/sentence_encoder.h"

#include "backend/cpu/pooling.h"
#include "model/checkpoint/checkpoint.h"
#include "model/checkpoint/load_error.h"

#include <algorithm>

namespace s1::bert {

SentenceEncoder::SentenceEncoder(std::unique_ptr<text::Tokenizer> tokenizer, std::unique_ptr<BertEncoder> encoder,
                                 SentencePipeline pipeline)
    : tokenizer_(std::move(tokenizer)), encoder_(std::move(encoder)), pipeline_(pipeline) {}

SentenceEncoder SentenceEncoder::open(const std::filesystem::path& model_dir, backend::cpu::Precision precision) {
  if (!std::filesystem::is_directory(model_dir)) {
    throw checkpoint::LoadError(model_dir.string() + ": not a directory");
  }
  const BertConfig config = read_bert_config(model_dir / "config.json");
  const SentencePipeline pipeline = read_sentence_pipeline(model_dir, config);
  auto tokenizer = std::make_unique<text::Tokenizer>(text::Tokenizer::from_file(model_dir / "tokenizer.json"));
  if (tokenizer->vocab_size() > static_cast<size_t>(config.vocab_size)) {
    throw checkpoint::LoadError((model_dir / "tokenizer.json").string() + ": vocabulary of " +
                                std::to_string(tokenizer->vocab_size()) + " tokens exceeds the model's vocab_size " +
                                std::to_string(config.vocab_size));
  }
  // The weights are copied into packed layouts, so the mapping is released once the encoder exists.
  const checkpoint::Checkpoint weights = checkpoint::Checkpoint::open(model_dir);
  auto encoder = std::make_unique<BertEncoder>(config, weights, precision);
  return SentenceEncoder(std::move(tokenizer), std::move(encoder), pipeline);
}

text::Encoding SentenceEncoder::tokenize(std::string_view text) const {
  return tokenizer_->encode(text, text::EncodeOptions{.add_special_tokens = true,
                                                      .max_length = static_cast<size_t>(pipeline_.max_seq_length)});
}

std::vector<float> SentenceEncoder::embed(std::span<const std::vector<int32_t>> sequences) {
  std::vector<std::span<const int32_t>> views(sequences.begin(), sequences.end());
  return embed(std::span<const std::span<const int32_t>>(views));
}

std::vector<float> SentenceEncoder::embed(std::span<const std::span<const int32_t>> sequences) {
  const size_t width = dimension();
  std::vector<float> out(sequences.size() * width);
  size_t first = 0;
  while (first < sequences.size()) {
    // One forward pass over as many whole sequences as fit the token bound (at least one).
    size_t last = first;
    size_t tokens = 0;
    while (last < sequences.size() && (last == first || tokens + sequences[last].size() <= max_batch_tokens)) {
      tokens += sequences[last].size();
      ++last;
    }
    const std::span<const float> hidden = encoder_->forward(sequences.subspan(first, last - first));
    const std::span<const backend::cpu::PackedSequence> layout = encoder_->layout();
    for (size_t i = 0; i < layout.size(); ++i) {
      const backend::cpu::PackedSequence& sequence = layout[i];
      const size_t lengths[] = {sequence.length};
      backend::cpu::mean_pool(hidden.subspan(sequence.offset * width, sequence.length * width), lengths,
                              sequence.length, std::span<float>(out).subspan((first + i) * width, width));
    }
    first = last;
  }
  if (pipeline_.normalize && !out.empty()) backend::cpu::l2_normalize(out, width, out);
  return out;
}

}  // namespace s1::bert
