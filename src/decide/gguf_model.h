#pragma once
// A GGUF decision checkpoint (llama.cpp's single file: weights, tokenizer.ggml.* and
// tokenizer.chat_template) served with the label-token contract, as a chat checkpoint directory is.

#include <filesystem>
#include <string>

#include "decide/contract_table.h"

namespace s1::decide {

// FILE.gguf's decision file: FILE.s1serve.json beside it, optional.
std::filesystem::path gguf_decision_file(const std::filesystem::path& gguf_file);

// Loads `file` (a .gguf) under the family of its general.architecture. Named after the file's stem
// unless its decision file says otherwise. A GGUF whose architecture s1serve does not run, that has
// no tokenizer.chat_template, or whose <arch>.decision.type names a decision type s1serve does not
// implement is a load error naming the key. Throws checkpoint::LoadError or text::TokenizerLoadError.
LoadedModel load_gguf_model(const std::filesystem::path& file);

}  // namespace s1::decide
