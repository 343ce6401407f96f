#pragma once
// Shared prefixes kept across requests: a decoder's memory after a prefix, keyed by the prefix's exact
// token ids, least recently used first out when their bytes pass the capacity. A request whose state
// prefix is here runs only its question branches (or only the part of its prefix past the cached one).

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "model/memory/sequence_memory.h"

namespace s1::runtime {

class PrefixCache {
 public:
  // capacity_bytes 0 keeps nothing.
  explicit PrefixCache(std::size_t capacity_bytes) : capacity_(capacity_bytes) {}
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  struct Found {
    std::shared_ptr<const memory::SequenceMemory> memory;  // nullptr: nothing cached begins `tokens`
    std::size_t tokens = 0;                                // how many of `tokens` it holds
  };
  // The longest cached prefix of `tokens` (at most all of them), now the most recently used; counted
  // as a hit when one is found, else as a miss. An entry whose memory is cuttable (attention only)
  // also serves a request that shares only its first tokens: cut to the common length, so that a
  // prefix ending a token earlier than a cached one still hits.
  Found longest_prefix(std::span<const int32_t> tokens);
  // Keeps `memory` as the memory after `tokens` (replacing an entry for the same tokens), then drops
  // the least recently used entries until the bytes fit; one larger than the capacity is not kept.
  void insert(std::vector<int32_t> tokens, std::shared_ptr<const memory::SequenceMemory> memory);

  struct Stats {
    uint64_t hits = 0;
    uint64_t misses = 0;
    uint64_t evictions = 0;
    std::size_t entries = 0;
    std::size_t bytes = 0;  // SequenceMemory::bytes of every entry (buffers two entries share count twice)
    std::size_t capacity_bytes = 0;
  };
  // Any thread (the metrics scrape); the other calls run on the model's executor thread.
  Stats stats() const;

 private:
  struct Entry {
    std::vector<int32_t> tokens;
    std::shared_ptr<const memory::SequenceMemory> memory;
    std::size_t bytes = 0;
  };

  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::list<Entry> entries_;  // most recently used first
  Stats stats_;
};

}  // namespace s1::runtime
