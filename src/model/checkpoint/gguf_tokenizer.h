#pragma once
// The tokenizer of a GGUF file, from its tokenizer.ggml.* keys (text/gguf_vocab.h).

#include "model/checkpoint/gguf.h"
#include "text/gguf_vocab.h"
#include "text/tokenizer.h"

namespace s1::checkpoint {

// Throws LoadError naming the file and key for a key of the wrong type.
text::GgufVocabulary read_gguf_vocabulary(const GgufFile& file);

// Also throws text::TokenizerLoadError for a vocabulary s1serve cannot build a tokenizer from.
text::Tokenizer gguf_tokenizer(const GgufFile& file);

}  // namespace s1::checkpoint
