#pragma once

#include <CLI/CLI.hpp>

namespace s1::cli {

// Registers `s1serve embed`: token ids and pooled, normalised embeddings as JSON lines.
void add_embed_command(CLI::App& app);

}  // namespace s1::cli
