#pragma once

#include <CLI/CLI.hpp>

namespace s1::cli {

// Registers `s1serve serve` on `app`; the callback runs the server.
void add_serve_command(CLI::App& app);

}  // namespace s1::cli
