#include "runtime/prefix_cache.h"

#include <algorithm>
#include <utility>

namespace s1::runtime {

PrefixCache::Found PrefixCache::longest_prefix(std::span<const int32_t> tokens) {
  const std::lock_guard lock(mutex_);
  // A linear scan: the capacity holds few memories of real models (a 300-token Qwen3-0.6B state is
  // about 70 MB), and comparing token ids costs nothing next to the forward pass it saves.
  auto best = entries_.end();
  std::size_t best_length = 0;
  for (auto entry = entries_.begin(); entry != entries_.end(); ++entry) {
    const std::size_t limit = std::min(entry->tokens.size(), tokens.size());
    const auto common = static_cast<std::size_t>(
        std::mismatch(entry->tokens.begin(), entry->tokens.begin() + static_cast<std::ptrdiff_t>(limit), tokens.begin())
            .first -
        entry->tokens.begin());
    const std::size_t usable = common == entry->tokens.size() || entry->memory->cuttable() ? common : 0;
    // On a tie a whole entry wins: it needs no cut.
    if (usable > best_length || (usable > 0 && usable == best_length && usable == entry->tokens.size())) {
      best = entry;
      best_length = usable;
    }
  }
  if (best == entries_.end()) {
    ++stats_.misses;
    return {};
  }
  ++stats_.hits;
  entries_.splice(entries_.begin(), entries_, best);
  const Entry& found = entries_.front();
  if (best_length == found.tokens.size()) return {found.memory, best_length};
  return {found.memory->prefix(best_length), best_length};
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
