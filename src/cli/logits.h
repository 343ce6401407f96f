#pragma once

#include <CLI/CLI.hpp>

namespace s1::cli {

// Registers `s1serve logits`: token ids and next-token logits of a causal decoder checkpoint.
void add_logits_command(CLI::App& app);

}  // namespace s1::cli
