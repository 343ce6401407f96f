#include "model/memory/sequence_memory.h"

#include <gtest/gtest.h>

#include <numeric>
#include <stdexcept>
#include <vector>

namespace s1::memory {
namespace {

// Two attention layers of width 3, one recurrent state of 4 floats, one conv tail of 2 floats.
const MemoryShape shape{.attention_layers = 2,
                        .kv_width = 3,
                        .recurrent_layers = 1,
                        .recurrent_size = 4,
                        .conv_layers = 1,
                        .conv_tail_size = 2};
const int owner = 0;

// An extension whose key at (layer, position p, column c) is 100·layer + 10·p + c and whose value is
// its negation, with end states filled with `tag`.
MemoryExtension extension_at(std::size_t first_position, std::size_t tokens, float tag) {
  MemoryExtension extension(shape, tokens);
  for (std::size_t l = 0; l < shape.attention_layers; ++l)
    for (std::size_t t = 0; t < tokens; ++t)
      for (std::size_t c = 0; c < shape.kv_width; ++c) {
        const auto key = static_cast<float>(100 * l + 10 * (first_position + t) + c);
        extension.keys(l)[t * shape.kv_width + c] = key;
        extension.values(l)[t * shape.kv_width + c] = -key;
      }
  std::ranges::fill(extension.recurrent(0), tag);
  std::ranges::fill(extension.conv_tail(0), tag);
  return extension;
}

void expect_positions(const SequenceMemory& memory, std::size_t layer) {
  std::vector<float> key_scratch, value_scratch;
  const SequenceMemory::KeyValues all = memory.key_values(layer, key_scratch, value_scratch);
  ASSERT_EQ(all.keys.size(), memory.length() * shape.kv_width);
  for (std::size_t p = 0; p < memory.length(); ++p)
    for (std::size_t c = 0; c < shape.kv_width; ++c) {
      EXPECT_EQ(all.keys[p * shape.kv_width + c], static_cast<float>(100 * layer + 10 * p + c));
      EXPECT_EQ(all.values[p * shape.kv_width + c], -static_cast<float>(100 * layer + 10 * p + c));
    }
}

TEST(SequenceMemory, EmptyMemoryHasZeroTailsAndTheZeroRecurrentState) {
  const SequenceMemory empty(&owner, shape);
  EXPECT_EQ(empty.length(), 0U);
  EXPECT_EQ(empty.owner(), &owner);
  EXPECT_TRUE(empty.recurrent(0).empty());
  EXPECT_EQ(std::vector<float>(empty.conv_tail(0).begin(), empty.conv_tail(0).end()), std::vector<float>(2, 0.0F));
  std::vector<float> keys, values;
  EXPECT_TRUE(empty.key_values(0, keys, values).keys.empty());
  EXPECT_EQ(empty.bytes(), 2 * sizeof(float));
}

TEST(SequenceMemory, BranchesShareTheirPrefixAndKeepTheirOwnEndStates) {
  const SequenceMemory empty(&owner, shape);
  const auto prefix = empty.extended(extension_at(0, 5, 1.0F));
  const auto left = prefix->extended(extension_at(5, 2, 2.0F));
  const auto right = prefix->extended(extension_at(5, 3, 3.0F));
  EXPECT_EQ(prefix->length(), 5U);
  EXPECT_EQ(left->length(), 7U);
  EXPECT_EQ(right->length(), 8U);
  for (std::size_t l = 0; l < shape.attention_layers; ++l) {
    expect_positions(*prefix, l);
    expect_positions(*left, l);
    expect_positions(*right, l);
  }
  EXPECT_EQ(prefix->recurrent(0)[0], 1.0F);
  EXPECT_EQ(left->recurrent(0)[0], 2.0F);
  EXPECT_EQ(right->conv_tail(0)[1], 3.0F);
  // One segment is read in place; several are gathered into the scratch.
  std::vector<float> keys, values;
  const float* in_place = prefix->key_values(0, keys, values).keys.data();
  EXPECT_NE(in_place, keys.data());
  const float* gathered = left->key_values(0, keys, values).keys.data();
  EXPECT_EQ(gathered, keys.data());
  // keys + values of every position in both layers, plus the end states.
  EXPECT_EQ(left->bytes(), (7 * 3 * 2 * 2 + 4 + 2) * sizeof(float));
}

TEST(SequenceMemory, GatherWritesOnlyTheAskedPositions) {
  const SequenceMemory empty(&owner, shape);
  const auto memory = empty.extended(extension_at(0, 2, 0.0F))->extended(extension_at(2, 3, 0.0F));
  std::vector<float> keys(memory->length() * shape.kv_width, 7.0F);
  std::vector<float> values(keys.size(), 7.0F);
  memory->gather(1, 1, 4, keys, values);  // across the segment boundary
  EXPECT_EQ(keys[0], 7.0F);
  EXPECT_EQ(keys[1 * 3], 110.0F);
  EXPECT_EQ(keys[3 * 3 + 2], 132.0F);
  EXPECT_EQ(values[2 * 3 + 1], -121.0F);
  EXPECT_EQ(keys[4 * 3], 7.0F);
}

TEST(SequenceMemory, ManyOneTokenExtensionsStayReadable) {
  // Past the segment limit an extension merges the segments; positions must not move.
  const SequenceMemory empty(&owner, shape);
  std::unique_ptr<SequenceMemory> memory = empty.clone();
  for (std::size_t p = 0; p < 40; ++p) memory = memory->extended(extension_at(p, 1, static_cast<float>(p)));
  EXPECT_EQ(memory->length(), 40U);
  for (std::size_t l = 0; l < shape.attention_layers; ++l) expect_positions(*memory, l);
  EXPECT_EQ(memory->recurrent(0)[3], 39.0F);
}

TEST(SequenceMemory, AnAttentionOnlyMemoryCutsToAShorterPrefix) {
  const MemoryShape attention{.attention_layers = 2,
                              .kv_width = 3,
                              .recurrent_layers = 0,
                              .recurrent_size = 0,
                              .conv_layers = 0,
                              .conv_tail_size = 0};
  const SequenceMemory empty(&owner, attention);
  const auto memory = empty.extended(MemoryExtension(attention, 2))->extended(MemoryExtension(attention, 3));
  ASSERT_TRUE(memory->cuttable());
  const auto cut = memory->prefix(3);  // inside the second segment
  EXPECT_EQ(cut->length(), 3U);
  EXPECT_EQ(cut->bytes(), 3 * 3 * 2 * 2 * sizeof(float));
  EXPECT_EQ(memory->prefix(2)->bytes(), 2 * 3 * 2 * 2 * sizeof(float));
  // A memory with end states (this file's shape) cannot be cut.
  EXPECT_FALSE(SequenceMemory(&owner, shape).cuttable());
  EXPECT_THROW((void)memory->prefix(6), std::logic_error);
}

TEST(SequenceMemory, RefusesAnExtensionOfAnotherShape) {
  const SequenceMemory empty(&owner, shape);
  MemoryShape other = shape;
  other.recurrent_layers = 0;
  EXPECT_THROW((void)empty.extended(MemoryExtension(other, 1)), std::invalid_argument);
}

}  // namespace
}  // namespace s1::memory
