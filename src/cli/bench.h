#pragma once

#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace s1::cli {

// One workload line, ready to send.
struct WorkloadItem {
  std::string body;                       // System One request bytes
  std::optional<nlohmann::json> expected; // question key → expected answer
};

// Parses one JSONL line: {"request": {...}, "expected": {...}?} or a bare System One body.
// `model`, when given, is set as the body's "model" member. Throws std::invalid_argument.
WorkloadItem parse_workload_line(std::string_view line, const std::optional<std::string>& model);

// Registers `s1serve bench`.
void add_bench_command(CLI::App& app);

}  // namespace s1::cli
