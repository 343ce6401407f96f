#include "decide/contracts/label_token.h"

#include <gtest/gtest.h>

namespace s1::decide {
namespace {

TEST(SharedPrefixLength, LongestCommonPrefixLeavingEveryBranchAToken) {
  EXPECT_EQ(shared_prefix_length({{1, 2, 3, 4}, {1, 2, 3, 5}, {1, 2, 3, 4, 6}}, 1), 3U);
  // Identical prompts still keep their last token in the branch, where the readout happens.
  EXPECT_EQ(shared_prefix_length({{1, 2, 3}, {1, 2, 3}}, 1), 2U);
  // A lone prompt runs whole, in one pass: a prefix would only add a pass over the weights.
  EXPECT_EQ(shared_prefix_length({{1, 2, 3}}, 1), 0U);
  EXPECT_EQ(shared_prefix_length({{7, 2}, {8, 2}}, 1), 0U);
  EXPECT_EQ(shared_prefix_length({}, 1), 0U);
}

TEST(SharedPrefixLength, RoundsDownToTheModelsGranularity) {
  std::vector<int32_t> common(150, 9);
  std::vector<int32_t> first = common, second = common;
  first.push_back(1);
  second.push_back(2);
  EXPECT_EQ(shared_prefix_length({first, second}, 64), 128U);
  EXPECT_EQ(shared_prefix_length({first, second}, 1), 150U);
  EXPECT_EQ(shared_prefix_length({{1, 2, 3, 4}, {1, 2, 3, 5}}, 64), 0U);
}

}  // namespace
}  // namespace s1::decide

namespace s1::decide {
namespace {

TEST(SplitAtSharedPrefix, PrefixOnceAndEachSuffixCountTowardsInputTokens) {
  const SharedPrefixPrompts split = split_at_shared_prefix({{1, 2, 3, 4}, {1, 2, 5}}, 1);
  EXPECT_EQ(split.prefix, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(split.suffixes, (std::vector<std::vector<int32_t>>{{3, 4}, {5}}));
  EXPECT_EQ(split.input_tokens, 5);
  EXPECT_EQ(split_at_shared_prefix({}, 1).input_tokens, 0);
  const SharedPrefixPrompts alone = split_at_shared_prefix({{1, 2, 3}}, 1);
  EXPECT_TRUE(alone.prefix.empty());
  EXPECT_EQ(alone.suffixes, (std::vector<std::vector<int32_t>>{{1, 2, 3}}));
  EXPECT_EQ(alone.input_tokens, 3);
}

}  // namespace
}  // namespace s1::decide
