// A request whose state prefix is in the prefix cache must get the rows it gets without the cache:
// bit for bit when the whole prefix is cached, within rounding when the cache holds part of it and
// the rest runs as an extension. On every decoder family's tiny checkpoint.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "decide/contracts/label_token.h"
#include "decoder_parity_support.h"
#include "model/families.h"
#include "runtime/prefix_cache.h"

namespace s1 {
namespace {

struct Case {
  std::string family;
  std::string name;
};

class PrefixCacheReuse : public ::testing::TestWithParam<Case> {};

std::vector<int32_t> ids(std::size_t count, std::size_t vocab, int32_t seed) {
  std::vector<int32_t> tokens(count);
  for (std::size_t i = 0; i < count; ++i)
    tokens[i] = static_cast<int32_t>((static_cast<std::size_t>(seed) * 131 + i * 17) % vocab);
  return tokens;
}

// The state followed by each question's tokens.
std::vector<std::vector<int32_t>> prompts_of(const std::vector<int32_t>& state,
                                             const std::vector<std::vector<int32_t>>& questions) {
  std::vector<std::vector<int32_t>> prompts;
  for (const auto& question : questions) {
    prompts.push_back(state);
    prompts.back().insert(prompts.back().end(), question.begin(), question.end());
  }
  return prompts;
}

void expect_rows_near(const std::vector<std::vector<float>>& actual, const std::vector<std::vector<float>>& expected,
                      float tolerance) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t q = 0; q < actual.size(); ++q) {
    ASSERT_EQ(actual[q].size(), expected[q].size());
    for (std::size_t i = 0; i < actual[q].size(); ++i) EXPECT_NEAR(actual[q][i], expected[q][i], tolerance) << q;
  }
}

TEST_P(PrefixCacheReuse, AnswersEqualWithAndWithoutTheCache) {
  const auto model = model::load_causal_decoder(parity::decoder_fixture_root(GetParam().family) / GetParam().name,
                                                  backend::cpu::Precision::fp32);
  const std::size_t vocab = model->info().vocab_size;
  const std::size_t granularity = model->info().prefix_granularity;
  const std::vector<int32_t> state = ids(2 * granularity + 30, vocab, 1);
  const auto split = [&](const std::vector<std::vector<int32_t>>& questions) {
    return decide::split_at_shared_prefix(prompts_of(state, questions), granularity);
  };
  const decide::SharedPrefixPrompts first = split({{3, 4, 5}, {6, 7}});
  const decide::SharedPrefixPrompts again = split({{8, 9}, {10, 11, 12}, {13}});
  ASSERT_FALSE(first.prefix.empty());
  ASSERT_EQ(first.prefix, again.prefix);

  runtime::PrefixCache cache(std::size_t{1} << 30);
  int64_t cached = -1;
  expect_rows_near(decide::last_token_hidden_rows(*model, first, &cache, &cached),
                   decide::last_token_hidden_rows(*model, first), 0.0F);
  EXPECT_EQ(cached, 0);
  // The same state with other questions: only the branches run, and nothing changes.
  expect_rows_near(decide::last_token_hidden_rows(*model, again, &cache, &cached),
                   decide::last_token_hidden_rows(*model, again), 0.0F);
  EXPECT_EQ(cached, static_cast<int64_t>(again.prefix.size()));

  // Questions sharing their first tokens: a longer prefix, whose cached part is extended.
  const decide::SharedPrefixPrompts longer = split({{20, 21, 22, 5}, {20, 21, 22, 6}});
  expect_rows_near(decide::last_token_hidden_rows(*model, longer, &cache, &cached),
                   decide::last_token_hidden_rows(*model, longer), 1e-4F);
  EXPECT_EQ(cached, static_cast<int64_t>(first.prefix.size()));

  // A prefix ending before a cached one: an attention-only memory is cut to it.
  const decide::SharedPrefixPrompts shorter = split({{20, 21, 7}, {20, 21, 8}});
  expect_rows_near(decide::last_token_hidden_rows(*model, shorter, &cache, &cached),
                   decide::last_token_hidden_rows(*model, shorter), 1e-4F);
  EXPECT_GE(cached, static_cast<int64_t>(first.prefix.size()));

  // One question alone branches from the longest cached part of its prompt.
  const decide::SharedPrefixPrompts alone = split({{30, 31}});
  ASSERT_TRUE(alone.prefix.empty());
  expect_rows_near(decide::last_token_hidden_rows(*model, alone, &cache, &cached),
                   decide::last_token_hidden_rows(*model, alone), 1e-4F);
  EXPECT_GE(cached, static_cast<int64_t>(first.prefix.size()));

  const runtime::PrefixCache::Stats stats = cache.stats();
  EXPECT_EQ(stats.misses, 1U);
  EXPECT_EQ(stats.hits, 4U);
}

INSTANTIATE_TEST_SUITE_P(Families, PrefixCacheReuse,
                         ::testing::Values(Case{"qwen3", "gqa2_untied"}, Case{"qwen3_5", "tied8"},
                                           Case{"lfm2", "types_tied"}),
                         [](const auto& test) { return test.param.family; });

}  // namespace
}  // namespace s1
