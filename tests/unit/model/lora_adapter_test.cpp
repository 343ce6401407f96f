#include "model/decoder/lora_adapter.h"

#include <gtest/gtest.h>

#include <vector>

#include "model/checkpoint/load_error.h"

namespace s1::decoder {
namespace {

LoraAdapter::Pair pair(std::size_t rank, std::size_t in, std::size_t out, float seed) {
  LoraAdapter::Pair p;
  p.rank = rank;
  p.in_features = in;
  p.out_features = out;
  for (std::size_t i = 0; i < rank * in; ++i) p.a.push_back(seed + 0.25F * static_cast<float>(i % 5) - 0.5F);
  for (std::size_t i = 0; i < out * rank; ++i) p.b.push_back(0.5F * static_cast<float>(i % 3) - seed);
  return p;
}

TEST(LowRankDelta, AddsScaledLowRankTermsToTheirRowsOfAFusedOutput) {
  // A fused projection [first (2 rows) | plain (1 row) | second (3 rows)] over 4 inputs, 2 tokens.
  const LoraAdapter::Pair first = pair(2, 4, 2, 0.3F);
  const LoraAdapter::Pair second = pair(1, 4, 3, -0.7F);
  const std::vector<LowRankDelta::Part> parts{{2, &first}, {1, nullptr}, {3, &second}};
  const auto delta = LowRankDelta::make(parts, 4, 2.0, "test");
  ASSERT_TRUE(delta.has_value());
  const std::vector<float> x{1.0F, -2.0F, 0.5F, 3.0F, 0.25F, 1.5F, -1.0F, 2.0F};
  std::vector<float> y(2 * 6, 1.0F);
  delta->add_to(x, y);

  // Hand computation in double: y = 1 + 2·B(A·x) per part, the plain row unchanged.
  const auto expected = [&](const LoraAdapter::Pair& p, std::size_t token, std::size_t row) {
    double sum = 0.0;
    for (std::size_t r = 0; r < p.rank; ++r) {
      double ax = 0.0;
      for (std::size_t i = 0; i < 4; ++i) ax += double(p.a[r * 4 + i]) * x[token * 4 + i];
      sum += double(p.b[row * p.rank + r]) * ax;
    }
    return 1.0 + 2.0 * sum;
  };
  for (std::size_t token = 0; token < 2; ++token) {
    EXPECT_NEAR(y[token * 6 + 0], expected(first, token, 0), 1e-5);
    EXPECT_NEAR(y[token * 6 + 1], expected(first, token, 1), 1e-5);
    EXPECT_EQ(y[token * 6 + 2], 1.0F);
    for (std::size_t row = 0; row < 3; ++row) EXPECT_NEAR(y[token * 6 + 3 + row], expected(second, token, row), 1e-5);
  }
}

TEST(LowRankDelta, NothingAdaptedAndShapeMismatch) {
  const std::vector<LowRankDelta::Part> plain{{3, nullptr}};
  EXPECT_FALSE(LowRankDelta::make(plain, 4, 2.0, "plain").has_value());
  const LoraAdapter::Pair wrong = pair(2, 5, 3, 0.1F);
  const std::vector<LowRankDelta::Part> parts{{3, &wrong}};
  EXPECT_THROW(LowRankDelta::make(parts, 4, 2.0, "wrong"), checkpoint::LoadError);
}

}  // namespace
}  // namespace s1::decoder
