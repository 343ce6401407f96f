#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

namespace s1::cli {

// One request `s1serve compare` sends both ways.
struct CompareCase {
  std::string name;
  std::string method;  // "GET" or "POST"
  std::string path;
  std::string body;            // exact bytes sent ("" for GET)
  int expected_status = 200;   // both sides must answer this
  bool compare_body = true;    // false for /health: a router's lists its upstream replicas
};

// The fixed set: health, each question type alone, all three together, unicode state/options/keys,
// structured JSON state, score with object levels, and one invalid request (422). `model`, when
// given, is sent as the body's "model" member; otherwise the servers' default model answers.
std::vector<CompareCase> compare_cases(const std::optional<std::string>& model);

// Registers `s1serve compare`.
void add_compare_command(CLI::App& app);

}  // namespace s1::cli
