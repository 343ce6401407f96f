#pragma once

#include <CLI/CLI.hpp>

namespace s1::cli {

// Registers `s1serve validate --model DIR --reference FILE.jsonl [--max-prob-drift X]
// [--max-score-drift Y] [--decision-margin M]`: runs every reference request through the model as
// `serve` loads it and compares the answers with the reference's (see validate.cpp for the format).
void add_validate_command(CLI::App& app);

}  // namespace s1::cli
