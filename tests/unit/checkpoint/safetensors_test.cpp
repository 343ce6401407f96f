#include "model/checkpoint/safetensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model/checkpoint/load_error.h"
#include "safetensors_builder.h"
#include "load_error_message.h"

namespace s1::checkpoint {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::build_file;
using testing::f32_bytes;
using testing::raw_file;
using testing::u16_bytes;

constexpr std::string_view kLabel = "/models/broken.safetensors";

// Parses and returns the LoadError message; fails the test if parsing succeeds.
std::string parse_error(std::span<const std::byte> bytes) {
  return testing::load_error_message([&] { parse_safetensors(bytes, kLabel); }, kLabel);
}

std::string parse_error_for_header(std::string_view header, size_t data_bytes = 0) {
  const std::vector<std::byte> data(data_bytes);
  return parse_error(raw_file(header, data));
}

TEST(ParseSafetensors, ReadsTensorsAndMetadata) {
  const auto file = build_file({{"weight", "F32", {2, 2}, f32_bytes({1, 2, 3, 4})},
                                {"bias", "BF16", {2}, u16_bytes({0x3F80, 0x4000})},
                                {"empty", "F16", {0, 3}, {}},
                                {"scalar", "F32", {}, f32_bytes({9})}},
                               {{"format", "pt"}});
  const auto contents = parse_safetensors(file, kLabel);
  EXPECT_EQ(contents.metadata.at("format"), "pt");
  ASSERT_EQ(contents.tensors.size(), 4u);
  // Ordered by data offset, as laid out.
  EXPECT_EQ(contents.tensors[0].name, "weight");
  EXPECT_EQ(contents.tensors[0].dtype, DType::kF32);
  EXPECT_THAT(contents.tensors[0].shape, ElementsAre(2, 2));
  EXPECT_THAT(to_float(contents.tensors[0]), ElementsAre(1, 2, 3, 4));
  EXPECT_THAT(to_float(contents.tensors[1]), ElementsAre(1, 2));
  EXPECT_EQ(contents.tensors[2].element_count(), 0);
  EXPECT_TRUE(contents.tensors[2].bytes.empty());
  EXPECT_THAT(to_float(contents.tensors[3]), ElementsAre(9));
}

TEST(ParseSafetensors, ViewsPointIntoTheInputWithoutCopying) {
  const auto file = build_file({{"w", "F32", {1}, f32_bytes({5})}});
  const auto contents = parse_safetensors(file, kLabel);
  const std::byte* begin = file.data();
  EXPECT_GE(contents.tensors[0].bytes.data(), begin);
  EXPECT_EQ(contents.tensors[0].bytes.data() + 4, begin + file.size());
}

TEST(ParseSafetensors, AcceptsUnpaddedHeaderAndOffsetsInAnyOrder) {
  const auto file = raw_file(
      R"({"b":{"dtype":"U8","shape":[1],"data_offsets":[2,3]},)"
      R"("a":{"dtype":"I16","shape":[1],"data_offsets":[0,2]}})",
      std::vector<std::byte>{std::byte{1}, std::byte{0}, std::byte{7}});
  const auto contents = parse_safetensors(file, kLabel);
  ASSERT_EQ(contents.tensors.size(), 2u);
  EXPECT_EQ(contents.tensors[0].name, "a");
  EXPECT_EQ(contents.tensors[1].bytes[0], std::byte{7});
}

TEST(ParseSafetensors, AcceptsEmptyHeaderObject) {
  EXPECT_TRUE(parse_safetensors(raw_file("{}", {}), kLabel).tensors.empty());
}

TEST(ParseSafetensorsErrors, FileShorterThanHeaderLength) {
  const std::vector<std::byte> bytes(5);
  EXPECT_THAT(parse_error(bytes), HasSubstr("too short"));
  EXPECT_THAT(parse_error({}), HasSubstr("too short"));
}

TEST(ParseSafetensorsErrors, HeaderLengthBeyondFile) {
  auto file = raw_file("{}", {});
  file[0] = std::byte{3};
  EXPECT_THAT(parse_error(file), HasSubstr("runs past the end of the file"));
  std::fill(file.begin(), file.begin() + 8, std::byte{0xff});  // 2^64 - 1
  EXPECT_THAT(parse_error(file), HasSubstr("exceeds the limit"));
}

TEST(ParseSafetensorsErrors, HeaderLengthOverLimit) {
  auto file = raw_file("{}", {});
  const uint64_t length = kMaxSafetensorsHeaderBytes + 1;
  std::memcpy(file.data(), &length, 8);
  EXPECT_THAT(parse_error(file), HasSubstr("exceeds the limit"));
}

TEST(ParseSafetensorsErrors, InvalidJson) {
  EXPECT_THAT(parse_error_for_header(R"({"a": )"), HasSubstr("not valid JSON"));
  EXPECT_THAT(parse_error_for_header("{\"a\xff\": 1}"), HasSubstr("not valid JSON"));
  EXPECT_THAT(parse_error_for_header(std::string("{}\0", 3)), HasSubstr("NUL byte"));
  EXPECT_THAT(parse_error_for_header(std::string("{\"a\0\":1}", 8)), HasSubstr("NUL byte"));
}

TEST(ParseSafetensorsErrors, NotAnObject) {
  EXPECT_THAT(parse_error_for_header("[]"), HasSubstr("not a JSON object"));
  EXPECT_THAT(parse_error_for_header("12"), HasSubstr("not a JSON object"));
}

TEST(ParseSafetensorsErrors, DeepNesting) {
  EXPECT_THAT(parse_error_for_header(R"({"a":{"shape":[[1]]}})"), HasSubstr("nests deeper"));
  EXPECT_THAT(parse_error_for_header(std::string(100000, '[')), HasSubstr("nests deeper"));
}

TEST(ParseSafetensorsErrors, DuplicateTensorName) {
  const auto message = parse_error_for_header(
      R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
      R"("w":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
      2);
  EXPECT_THAT(message, HasSubstr("'w' twice"));
}

TEST(ParseSafetensorsErrors, UnknownDtype) {
  const auto message =
      parse_error_for_header(R"({"w":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}})", 1);
  EXPECT_THAT(message, HasSubstr("tensor 'w'"));
  EXPECT_THAT(message, HasSubstr("unknown dtype 'F4'"));
  EXPECT_THAT(parse_error_for_header(R"({"w":{"dtype":4,"shape":[],"data_offsets":[0,4]}})", 4),
              HasSubstr("dtype is not a string"));
}

TEST(ParseSafetensorsErrors, BadShape) {
  for (const char* shape : {"[-1]", "[1.0]", "[\"2\"]", "2", "[true]", "null"}) {
    const auto header = std::string(R"({"w":{"dtype":"U8","shape":)") + shape +
                        R"(,"data_offsets":[0,1]}})";
    const auto message = parse_error_for_header(header, 1);
    EXPECT_THAT(message, HasSubstr("tensor 'w'")) << shape;
    EXPECT_THAT(message, HasSubstr("shape")) << shape;
  }
}

TEST(ParseSafetensorsErrors, MissingOrExtraEntryKeys) {
  EXPECT_THAT(parse_error_for_header(R"({"w":{"dtype":"U8","shape":[1]}})", 1),
              HasSubstr("tensor 'w': missing 'data_offsets'"));
  EXPECT_THAT(parse_error_for_header(
                  R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"offsets":[0,1]}})", 1),
              HasSubstr("tensor 'w': unexpected key 'offsets'"));
  EXPECT_THAT(parse_error_for_header(R"({"w":[1]})", 1), HasSubstr("tensor 'w': entry is not"));
}

TEST(ParseSafetensorsErrors, BadOffsets) {
  EXPECT_THAT(parse_error_for_header(R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", 2),
              HasSubstr("tensor 'w': data_offsets [0,4] run past the data section"));
  EXPECT_THAT(parse_error_for_header(R"({"w":{"dtype":"U8","shape":[0],"data_offsets":[2,1]}})", 2),
              HasSubstr("tensor 'w': data_offsets [2,1] end before they begin"));
  EXPECT_THAT(parse_error_for_header(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0]}})", 1),
              HasSubstr("tensor 'w': data_offsets is not a pair"));
  EXPECT_THAT(
      parse_error_for_header(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[-1,0]}})", 1),
      HasSubstr("tensor 'w': data_offsets is not a pair of non-negative"));
  EXPECT_THAT(parse_error_for_header(
                  R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,18446744073709551616]}})", 1),
              HasSubstr("tensor 'w'"));
}

TEST(ParseSafetensorsErrors, SizeMismatch) {
  const auto message =
      parse_error_for_header(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4);
  EXPECT_THAT(message, HasSubstr("tensor 'w': data_offsets [0,4] span 4 bytes"));
  EXPECT_THAT(message, HasSubstr("needs 8"));
}

TEST(ParseSafetensorsErrors, ShapeProductOverflow) {
  // 2^32 * 2^32 wraps to 0 in 64 bits, which would match empty offsets without the guard.
  const auto message = parse_error_for_header(
      R"({"w":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}})");
  EXPECT_THAT(message, HasSubstr("tensor 'w'"));
  EXPECT_THAT(message, HasSubstr("overflows a 64-bit byte count"));
  EXPECT_THAT(parse_error_for_header(
                  R"({"w":{"dtype":"U8","shape":[9223372036854775808],"data_offsets":[0,0]}})"),
              HasSubstr("tensor 'w'"));
}

TEST(ParseSafetensorsErrors, Overlap) {
  const auto message = parse_error_for_header(
      R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
      R"("b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})",
      6);
  EXPECT_THAT(message, HasSubstr("tensor 'b': data overlaps tensor 'a'"));
}

TEST(ParseSafetensorsErrors, HoleAndTrailingBytes) {
  EXPECT_THAT(parse_error_for_header(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                                     R"("b":{"dtype":"U8","shape":[2],"data_offsets":[3,5]}})",
                                     5),
              HasSubstr("tensor 'b': data begins at offset 3, leaving a hole"));
  EXPECT_THAT(parse_error_for_header(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})", 3),
              HasSubstr("1 trailing bytes"));
}

TEST(ParseSafetensorsErrors, BadMetadata) {
  EXPECT_THAT(parse_error_for_header(R"({"__metadata__":{"format":1}})"),
              HasSubstr("__metadata__ value for 'format' is not a string"));
  EXPECT_THAT(parse_error_for_header(R"({"__metadata__":["pt"]})"),
              HasSubstr("__metadata__ is not a JSON object"));
  EXPECT_THAT(parse_error_for_header(R"({"__metadata__":{"a":{"b":"c"}}})"),
              HasSubstr("__metadata__ value for 'a'"));
}

}  // namespace
}  // namespace s1::checkpoint
