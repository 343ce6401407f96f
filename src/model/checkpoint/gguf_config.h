#pragma once
// A GGUF file's architecture keys as the config.json our families read, so that a family loads a
// GGUF through the same strict ConfigReader as a Hugging Face directory.

#include <span>
#include <string_view>

#include "model/checkpoint/config_reader.h"
#include "model/checkpoint/gguf.h"

namespace s1::checkpoint {

// Supported: general.architecture "qwen3", "qwen35" and "lfm2". Every "<architecture>.*" key must be one the mapping
// knows (an unknown one may change the maths: rope scaling, sliding windows…); general.*,
// tokenizer.* and the decision keys are not model settings and are left to their readers.
// Throws LoadError naming the file and key.
ConfigReader gguf_config(const GgufFile& file);

// The "<architecture>.<key>" keys llama.cpp's TextModel writes (qwen3 and qwen35) and the
// config.json keys they hold: the table gguf_config reads, for a writer.
struct GgufConfigKey {
  std::string_view gguf;
  std::string_view config;
  bool is_float = false;
};
std::span<const GgufConfigKey> gguf_text_model_keys();

}  // namespace s1::checkpoint
