#include "model/checkpoint/tensor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "model/checkpoint/load_error.h"
#include "safetensors_builder.h"

namespace s1::checkpoint {
namespace {

using testing::f32_bytes;
using testing::u16_bytes;

TEST(HalfToFloat, NormalValues) {
  EXPECT_EQ(half_to_float(0x3C00), 1.0f);
  EXPECT_EQ(half_to_float(0xC000), -2.0f);
  EXPECT_EQ(half_to_float(0x3555), 0.333251953125f);
  EXPECT_EQ(half_to_float(0x7BFF), 65504.0f);   // largest finite half
  EXPECT_EQ(half_to_float(0x0400), 0x1p-14f);   // smallest normal
}

TEST(HalfToFloat, ZerosAndSubnormals) {
  EXPECT_EQ(half_to_float(0x0000), 0.0f);
  EXPECT_TRUE(std::signbit(half_to_float(0x8000)));
  EXPECT_EQ(half_to_float(0x8000), 0.0f);
  EXPECT_EQ(half_to_float(0x0001), 0x1p-24f);            // smallest subnormal
  EXPECT_EQ(half_to_float(0x03FF), 1023.0f * 0x1p-24f);  // largest subnormal
  EXPECT_EQ(half_to_float(0x8200), -0x1p-15f);
}

TEST(HalfToFloat, InfinityAndNan) {
  EXPECT_EQ(half_to_float(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(half_to_float(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(half_to_float(0x7E00)));
  EXPECT_TRUE(std::isnan(half_to_float(0x7C01)));  // signalling payload stays a NaN
  EXPECT_TRUE(std::isnan(half_to_float(0xFE00)));
}

TEST(HalfToFloat, RoundTripsEveryFiniteHalfThroughFloat) {
  // Every half is exactly representable as float; the exponent must decode monotonically.
  float previous = 0.0f;
  for (uint32_t bits = 1; bits < 0x7C00; ++bits) {
    const float value = half_to_float(static_cast<uint16_t>(bits));
    ASSERT_GT(value, previous) << bits;
    previous = value;
  }
}

TEST(Bfloat16ToFloat, ShiftsIntoTheHighHalf) {
  EXPECT_EQ(bfloat16_to_float(0x3F80), 1.0f);
  EXPECT_EQ(bfloat16_to_float(0xC049), -3.140625f);
  EXPECT_EQ(bfloat16_to_float(0x0001), std::bit_cast<float>(0x00010000u));
  EXPECT_EQ(bfloat16_to_float(0x7F80), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(bfloat16_to_float(0x7FC0)));
}

TEST(DType, ParsesSafetensorsSpellingsOnly) {
  EXPECT_EQ(parse_dtype("F32"), DType::kF32);
  EXPECT_EQ(parse_dtype("BF16"), DType::kBF16);
  EXPECT_EQ(parse_dtype("F8_E4M3"), DType::kF8E4M3);
  EXPECT_EQ(parse_dtype("I64"), DType::kI64);
  EXPECT_EQ(parse_dtype("float32"), std::nullopt);
  EXPECT_EQ(parse_dtype("f32"), std::nullopt);
  EXPECT_EQ(parse_dtype(""), std::nullopt);
  EXPECT_EQ(dtype_size(DType::kBF16), 2u);
  EXPECT_EQ(dtype_size(DType::kU64), 8u);
  EXPECT_EQ(dtype_name(DType::kF16), "F16");
}

TEST(ToFloat, ConvertsEachFloatDtype) {
  const auto f32 = f32_bytes({1.5f, -2.0f});
  const auto f16 = u16_bytes({0x3C00, 0x0001, 0xFC00});
  const auto bf16 = u16_bytes({0x3F80, 0xC049});
  EXPECT_THAT(to_float({"a", DType::kF32, {2}, f32}), ::testing::ElementsAre(1.5f, -2.0f));
  EXPECT_THAT(to_float({"b", DType::kF16, {3}, f16}),
              ::testing::ElementsAre(1.0f, 0x1p-24f, -std::numeric_limits<float>::infinity()));
  EXPECT_THAT(to_float({"c", DType::kBF16, {2}, bf16}), ::testing::ElementsAre(1.0f, -3.140625f));
}

TEST(ToFloat, HandlesUnalignedData) {
  // Tensor data follows a header of any length, so views need not be aligned.
  auto floats = f32_bytes({7.25f, -1.0f});
  floats.insert(floats.begin(), std::byte{0});
  EXPECT_THAT(to_float({"u", DType::kF32, {2}, std::span<const std::byte>(floats).subspan(1)}),
              ::testing::ElementsAre(7.25f, -1.0f));
  auto halves = u16_bytes({0x3C00, 0xC000});
  halves.insert(halves.begin(), std::byte{0});
  EXPECT_THAT(to_float({"h", DType::kF16, {2}, std::span<const std::byte>(halves).subspan(1)}),
              ::testing::ElementsAre(1.0f, -2.0f));
}

TEST(ToFloat, RejectsNonFloatDtypeNamingTheTensor) {
  const std::vector<std::byte> bytes(8);
  try {
    to_float({"position_ids", DType::kI64, {1}, bytes});
    FAIL() << "expected LoadError";
  } catch (const LoadError& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("position_ids"));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("I64"));
  }
}

TEST(TensorView, ElementCount) {
  EXPECT_EQ((TensorView{"s", DType::kF32, {}, {}}).element_count(), 1);
  EXPECT_EQ((TensorView{"z", DType::kF32, {3, 0}, {}}).element_count(), 0);
  EXPECT_EQ((TensorView{"m", DType::kF32, {2, 3, 4}, {}}).element_count(), 24);
  EXPECT_EQ(shape_to_string(std::vector<int64_t>{2, 3}), "[2, 3]");
}

}  // namespace
}  // namespace s1::checkpoint
