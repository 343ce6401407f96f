#include "runtime/prefix_cache.h"

#include <algorithm>
#include <utility>

namespace s1::runtime {

PrefixCache::Found PrefixCache::longest_prefix(std::span<const int32_t> tokens) {
  const std::lock_guard lock(mutex_);
  // A linear scan: the capacity holds few memories of real models (a 300-token Qwen3-0.6B state is
  // about 70 MB), and comparing token ids costs nothing next to the forward pass it saves.
  auto best = entries_.end();
  for (auto entry = entries_.begin(); entry != entries_.end(); ++entry) {
    if (entry->tokens.size() > tokens.size() || (best != entries_.end() && entry->tokens.size() <= best->tokens.size()))
      continue;
    if (std::equal(entry->tokens.begin(), entry->tokens.end(), tokens.begin())) best = entry;
  }
  if (best == entries_.end()) {
    ++stats_.misses;
    return {};
  }
  ++stats_.hits;
  entries_.splice(entries_.begin(), entries_, best);
  return {entries_.front().memory, entries_.front().tokens.size()};
}

void PrefixCache::insert(std::vector<int32_t> tokens, std::shared_ptr<const memory::SequenceMemory> memory) {
  const std::lock_guard lock(mutex_);
  const auto same = std::ranges::find_if(entries_, [&](const Entry& entry) { return entry.tokens == tokens; });
  if (same != entries_.end()) {
    stats_.bytes -= same->bytes;
    entries_.erase(same);
  }
  const std::size_t bytes = memory->bytes();
  if (bytes > capacity_) return;
  entries_.push_front(Entry{.tokens = std::move(tokens), .memory = std::move(memory), .bytes = bytes});
  stats_.bytes += bytes;
  while (stats_.bytes > capacity_) {
    stats_.bytes -= entries_.back().bytes;
    entries_.pop_back();
    ++stats_.evictions;
  }
}

PrefixCache::Stats PrefixCache::stats() const {
  const std::lock_guard lock(mutex_);
  Stats stats = stats_;
  stats.entries = entries_.size();
  stats.capacity_bytes = capacity_;
  return stats;
}

}  // namespace s1::runtime
