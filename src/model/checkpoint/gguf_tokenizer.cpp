#include "model/checkpoint/gguf_tokenizer.h"

#include <limits>
#include <string>

namespace s1::checkpoint {

text::GgufVocabulary read_gguf_vocabulary(const GgufFile& file) {
  text::GgufVocabulary vocabulary;
  vocabulary.model = file.require(file.get_string("tokenizer.ggml.model"), "tokenizer.ggml.model");
  vocabulary.pre = file.get_string("tokenizer.ggml.pre").value_or("default");
  vocabulary.tokens = file.require(file.get_strings("tokenizer.ggml.tokens"), "tokenizer.ggml.tokens");
  if (vocabulary.tokens.size() > static_cast<std::size_t>(std::numeric_limits<int32_t>::max())) {
    file.fail_key("tokenizer.ggml.tokens", "holds more tokens than 32-bit ids can number");
  }
  for (const int64_t type : file.get_ints("tokenizer.ggml.token_type").value_or(std::vector<int64_t>{})) {
    if (type < std::numeric_limits<int32_t>::min() || type > std::numeric_limits<int32_t>::max()) {
      file.fail_key("tokenizer.ggml.token_type", "holds " + std::to_string(type) + ", not a token type");
    }
    vocabulary.token_types.push_back(static_cast<int32_t>(type));
  }
  vocabulary.scores = file.get_floats("tokenizer.ggml.scores").value_or(std::vector<double>{});
  vocabulary.merges = file.get_strings("tokenizer.ggml.merges").value_or(std::vector<std::string>{});
  vocabulary.bos_id = file.get_int("tokenizer.ggml.bos_token_id");
  vocabulary.eos_id = file.get_int("tokenizer.ggml.eos_token_id");
  vocabulary.unknown_id = file.get_int("tokenizer.ggml.unknown_token_id");
  vocabulary.padding_id = file.get_int("tokenizer.ggml.padding_token_id");
  vocabulary.add_bos = file.get_bool("tokenizer.ggml.add_bos_token");
  vocabulary.add_eos = file.get_bool("tokenizer.ggml.add_eos_token");
  vocabulary.add_space_prefix = file.get_bool("tokenizer.ggml.add_space_prefix");
  return vocabulary;
}

text::Tokenizer gguf_tokenizer(const GgufFile& file) {
  return text::tokenizer_from_gguf(read_gguf_vocabulary(file), file.label);
}

}  // namespace s1::checkpoint
