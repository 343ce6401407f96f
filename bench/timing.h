#pragma once
// The timing harness of the end-to-end benchmarks: median (p10, p90) of `reps` runs after `warmup`
// runs, computed exactly like the Python peers' in bench/peers/.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace s1::bench {

struct Summary {
  double median_ms = 0, p10_ms = 0, p90_ms = 0;
};

inline Summary timed(int warmup, int reps, const std::function<void()>& run) {
  for (int i = 0; i < warmup; ++i) run();
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  const auto at = [&](double q) { return ms[static_cast<std::size_t>(q * static_cast<double>(ms.size() - 1) + 0.5)]; };
  return {at(0.5), at(0.1), at(0.9)};
}

inline std::string json(const Summary& s) {
  char buffer[160];
  std::snprintf(buffer, sizeof buffer, "{\"median\": %.3f, \"p10\": %.3f, \"p90\": %.3f}", s.median_ms, s.p10_ms,
                s.p90_ms);
  return buffer;
}

}  // namespace s1::bench
