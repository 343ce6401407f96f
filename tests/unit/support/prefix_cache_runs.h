#pragma once
// Checking that a decoder contract answers the same with the cross-request prefix cache as without.

#include <cstddef>
#include <filesystem>
#include <vector>

#include "api/request.h"
#include "runtime/engine.h"

namespace s1::test {

// Every request of a reference's expected-answers JSONL through `plain` (no cache) and, each with a
// fresh cache, twice through `cached`: the first run misses, the second finds its whole prefix
// cached. EXPECTs both cached runs' answers (every probability, confidence, score, choice) to equal
// the plain run's exactly, `cached` to accept the cache, the first run to report no cached tokens and
// the second fewer than its input tokens. Returns how many requests the second run reused tokens for.
std::size_t expect_prefix_cache_changes_nothing(runtime::Engine& plain, runtime::Engine& cached,
                                                const std::filesystem::path& expected_jsonl);
// The same over given requests.
std::size_t expect_prefix_cache_changes_nothing(runtime::Engine& plain, runtime::Engine& cached,
                                                const std::vector<api::DecisionRequest>& requests);

}  // namespace s1::test
