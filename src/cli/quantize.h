#pragma once

#include <CLI/CLI.hpp>

namespace s1::cli {

// Registers `s1serve quantize --model DIR --type q8_0|q4_k --out FILE.gguf`: writes a GGUF file
// from a safetensors checkpoint directory (docs/tools.md).
void add_quantize_command(CLI::App& app);

}  // namespace s1::cli
