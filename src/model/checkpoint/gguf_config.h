#pragma once
// A GGUF file's architecture keys as the config.json our families read, so that a family loads a
// GGUF through the same strict ConfigReader as a Hugging Face directory.

#include "model/checkpoint/config_reader.h"
#include "model/checkpoint/gguf.h"

namespace s1::checkpoint {

// Supported: general.architecture "qwen3", "qwen35" and "lfm2". Every "<architecture>.*" key must be one the mapping
// knows (an unknown one may change the maths: rope scaling, sliding windows…); general.*,
// tokenizer.* and the decision keys are not model settings and are left to their readers.
// Throws LoadError naming the file and key.
ConfigReader gguf_config(const GgufFile& file);

}  // namespace s1::checkpoint
