#include "runtime/prefix_cache.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace s1::runtime {
namespace {

using memory::MemoryExtension;
using memory::MemoryShape;
using memory::SequenceMemory;

// One attention layer of width 1: a memory of n tokens holds 2·n floats, 8·n bytes.
const MemoryShape shape{.attention_layers = 1,
                        .kv_width = 1,
                        .recurrent_layers = 0,
                        .recurrent_size = 0,
                        .conv_layers = 0,
                        .conv_tail_size = 0};
const int owner = 0;

std::shared_ptr<const SequenceMemory> memory_of(std::size_t tokens) {
  return SequenceMemory(&owner, shape).extended(MemoryExtension(shape, tokens));
}

TEST(PrefixCache, FindsTheLongestCachedPrefix) {
  PrefixCache cache(1 << 20);
  EXPECT_EQ(cache.longest_prefix(std::vector<int32_t>{1, 2, 3}).memory, nullptr);
  const auto short_memory = memory_of(2);
  const auto long_memory = memory_of(3);
  cache.insert({1, 2}, short_memory);
  cache.insert({1, 2, 3}, long_memory);
  cache.insert({1, 5, 3, 4}, memory_of(4));
  const PrefixCache::Found whole = cache.longest_prefix(std::vector<int32_t>{1, 2, 3, 4});
  EXPECT_EQ(whole.memory, long_memory);
  EXPECT_EQ(whole.tokens, 3U);
  const PrefixCache::Found part = cache.longest_prefix(std::vector<int32_t>{1, 2, 7});
  EXPECT_EQ(part.memory, short_memory);
  EXPECT_EQ(part.tokens, 2U);
  // An attention-only memory longer than the common part is cut to it.
  const PrefixCache::Found cut = cache.longest_prefix(std::vector<int32_t>{1, 5, 3, 9});
  ASSERT_NE(cut.memory, nullptr);
  EXPECT_EQ(cut.tokens, 3U);
  EXPECT_EQ(cut.memory->length(), 3U);
  EXPECT_EQ(cache.longest_prefix(std::vector<int32_t>{2, 1}).memory, nullptr);
  const PrefixCache::Stats stats = cache.stats();
  EXPECT_EQ(stats.hits, 3U);
  EXPECT_EQ(stats.misses, 2U);
  EXPECT_EQ(stats.entries, 3U);
  EXPECT_EQ(stats.bytes, (2 + 3 + 4) * 8U);
}

TEST(PrefixCache, EvictsTheLeastRecentlyUsedByBytes) {
  PrefixCache cache(10 * 8);  // ten tokens' worth
  cache.insert({1}, memory_of(4));
  cache.insert({2}, memory_of(4));
  EXPECT_NE(cache.longest_prefix(std::vector<int32_t>{1}).memory, nullptr);  // {1} is now the newest
  cache.insert({3}, memory_of(4));                                           // 12 tokens: {2} goes
  EXPECT_EQ(cache.longest_prefix(std::vector<int32_t>{2}).memory, nullptr);
  EXPECT_NE(cache.longest_prefix(std::vector<int32_t>{1}).memory, nullptr);
  EXPECT_NE(cache.longest_prefix(std::vector<int32_t>{3}).memory, nullptr);
  PrefixCache::Stats stats = cache.stats();
  EXPECT_EQ(stats.evictions, 1U);
  EXPECT_EQ(stats.bytes, 8 * 8U);
  EXPECT_EQ(stats.capacity_bytes, 80U);
  // Replacing an entry does not count it twice; one over the capacity is not kept at all.
  cache.insert({3}, memory_of(2));
  cache.insert({4}, memory_of(11));
  stats = cache.stats();
  EXPECT_EQ(stats.entries, 2U);
  EXPECT_EQ(stats.bytes, 6 * 8U);
  EXPECT_EQ(cache.longest_prefix(std::vector<int32_t>{4}).memory, nullptr);
}

TEST(PrefixCache, AMemoryWithEndStatesIsNeverCut) {
  // Its recurrent state is the one after its last token: no shorter prefix can be read from it.
  const MemoryShape hybrid{.attention_layers = 1,
                           .kv_width = 1,
                           .recurrent_layers = 1,
                           .recurrent_size = 2,
                           .conv_layers = 0,
                           .conv_tail_size = 0};
  PrefixCache cache(1 << 20);
  cache.insert({1, 2, 3}, SequenceMemory(&owner, hybrid).extended(MemoryExtension(hybrid, 3)));
  EXPECT_EQ(cache.longest_prefix(std::vector<int32_t>{1, 2, 9}).memory, nullptr);
  EXPECT_EQ(cache.longest_prefix(std::vector<int32_t>{1, 2, 3, 9}).tokens, 3U);
}

TEST(PrefixCache, CapacityZeroKeepsNothing) {
  PrefixCache cache(0);
  cache.insert({1}, memory_of(1));
  EXPECT_EQ(cache.stats().entries, 0U);
}

}  // namespace
}  // namespace s1::runtime
