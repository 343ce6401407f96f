#include "model/checkpoint/gguf.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "backend/quant_blocks.h"
#include "gguf_bytes.h"
#include "load_error_message.h"
#include "model/checkpoint/gguf_config.h"
#include "model/checkpoint/gguf_dequant.h"
#include "model/checkpoint/load_error.h"
#include "model/checkpoint/mapped_file.h"
#include "source_dir.h"

namespace s1::checkpoint {
namespace {

using s1::checkpoint::testing::GgufBytes;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr std::string_view kLabel = "/models/broken.gguf";

std::string parse_error(std::span<const std::byte> bytes) {
  return testing::load_error_message([&] { parse_gguf(bytes, kLabel); }, kLabel);
}

// Written by tools/reference/make_gguf_fixtures.py.
MappedFile types_file() { return MappedFile::open(testing::source_dir() / "tests/fixtures/gguf/types.gguf"); }

TEST(ParseGguf, ReadsEveryMetadataValueType) {
  const auto mapped = types_file();
  const GgufFile file = parse_gguf(mapped.bytes(), "types.gguf");
  EXPECT_EQ(file.version, 3u);
  EXPECT_EQ(file.alignment, 64u);
  EXPECT_EQ(file.get_string("general.architecture"), "s1test");
  EXPECT_EQ(file.get_uint("test.uint8"), 200u);
  EXPECT_EQ(file.find("test.uint8")->type, GgufType::kUint8);
  EXPECT_EQ(file.get_int("test.int8"), -100);
  EXPECT_EQ(file.get_uint("test.uint16"), 60000u);
  EXPECT_EQ(file.get_int("test.int16"), -30000);
  EXPECT_EQ(file.get_uint("test.uint32"), 4000000000u);
  EXPECT_EQ(file.get_int("test.int32"), -2000000000);
  EXPECT_EQ(file.get_float("test.float32"), 0.5);
  EXPECT_EQ(file.find("test.float32")->type, GgufType::kFloat32);
  EXPECT_EQ(file.get_bool("test.bool"), true);
  EXPECT_EQ(file.get_string("test.string"), "h\xc3\xa9llo");
  EXPECT_EQ(file.get_uint("test.uint64"), (uint64_t{1} << 63) + 5);
  EXPECT_EQ(file.get_int("test.int64"), -(int64_t{1} << 62));
  EXPECT_EQ(file.get_float("test.float64"), 0.1);
  EXPECT_THAT(*file.get_ints("test.array.int32"), ElementsAre(1, -2, 3));
  EXPECT_THAT(*file.get_strings("test.array.string"), ElementsAre("a", "bc", ""));
  EXPECT_THAT(*file.get_floats("test.array.float32"), ElementsAre(0.25, -1.5));
  const GgufValue* nested = file.find("test.array.nested");
  ASSERT_NE(nested, nullptr);
  const auto& outer = std::get<GgufArray>(nested->value);
  ASSERT_EQ(outer.element_type, GgufType::kArray);
  ASSERT_EQ(outer.items.size(), 2u);
  const auto& first = std::get<GgufArray>(outer.items[0].value);
  EXPECT_EQ(first.element_type, GgufType::kInt32);
  ASSERT_EQ(first.items.size(), 2u);
  EXPECT_EQ(std::get<int64_t>(first.items[1].value), 2);
  EXPECT_EQ(std::get<GgufArray>(outer.items[1].value).items.size(), 1u);
  EXPECT_FALSE(file.get_uint("test.absent").has_value());
}

TEST(ParseGguf, TypedReadersNameTheKeyOfAWrongType) {
  const auto mapped = types_file();
  const GgufFile file = parse_gguf(mapped.bytes(), "types.gguf");
  const auto message = [](auto&& read) {
    try {
      read();
    } catch (const LoadError& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(message([&] { file.get_string("test.uint8"); }),
              HasSubstr("key 'test.uint8' is a uint8, expected a string"));
  EXPECT_THAT(message([&] { file.get_uint("test.int8"); }), HasSubstr("'test.int8'"));
  EXPECT_THAT(message([&] { file.get_strings("test.array.int32"); }),
              HasSubstr("is a array of int32, expected an array of string"));
  EXPECT_THAT(message([&] { file.require(file.get_uint("test.absent"), "test.absent"); }),
              HasSubstr("key 'test.absent' is missing"));
}

// gguf.quants.dequantize's values for random blocks of each type, stored next to them by
// tools/reference/make_gguf_fixtures.py: ours must agree bit for bit.
TEST(Dequantize, MatchesTheGgufPackageForEveryType) {
  const auto mapped = types_file();
  const GgufFile file = parse_gguf(mapped.bytes(), "types.gguf");
  for (const char* name : {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_k", "q5_k", "q6_k", "q5_0"}) {
    SCOPED_TRACE(name);
    const GgufTensor* tensor = file.find_tensor(name);
    const GgufTensor* expected = file.find_tensor(std::string(name) + ".expected");
    ASSERT_NE(tensor, nullptr);
    ASSERT_NE(expected, nullptr);
    EXPECT_THAT(tensor->shape(), ElementsAre(3, 512));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(tensor->bytes.data()) % 64,
              reinterpret_cast<std::uintptr_t>(mapped.bytes().data()) % 64);
    const auto values = dequantize(*tensor);
    const auto reference = dequantize(*expected);
    ASSERT_EQ(values.size(), reference.size());
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (std::bit_cast<uint32_t>(values[i]) != std::bit_cast<uint32_t>(reference[i])) {
        if (mismatches++ < 5) ADD_FAILURE() << "value " << i << ": " << values[i] << " vs " << reference[i];
      }
    }
    EXPECT_EQ(mismatches, 0u);
  }
}

// `s1serve quantize` writes Q5_0 where llama.cpp's quantizer does (Q4_K rows that are not whole
// blocks): the same bytes as the gguf package's quantiser, whose Q5_0 is ggml's reference.
TEST(QuantizeQ5_0, MatchesTheGgufPackageByteForByte) {
  const auto mapped = types_file();
  const GgufFile file = parse_gguf(mapped.bytes(), "types.gguf");
  const GgufTensor* source = file.find_tensor("q5_0.source");
  const GgufTensor* expected = file.find_tensor("q5_0.quantized");
  ASSERT_NE(source, nullptr);
  ASSERT_NE(expected, nullptr);
  ASSERT_EQ(expected->type, GgmlType::kQ5_0);
  const auto values = dequantize(*source);
  ASSERT_EQ(values.size() % s1::backend::quant::q5_0_values, 0u);
  std::vector<std::byte> ours(values.size() / s1::backend::quant::q5_0_values * s1::backend::quant::q5_0_bytes);
  for (std::size_t b = 0; b < values.size() / s1::backend::quant::q5_0_values; ++b) {
    s1::backend::quant::quantize_q5_0_block(values.data() + b * s1::backend::quant::q5_0_values,
                                            reinterpret_cast<uint8_t*>(ours.data()) + b * s1::backend::quant::q5_0_bytes);
  }
  ASSERT_EQ(ours.size(), expected->bytes.size());
  EXPECT_EQ(std::memcmp(ours.data(), expected->bytes.data(), ours.size()), 0);
}

TEST(Dequantize, RejectsAMismatchedBuffer) {
  std::vector<std::byte> blocks(34);
  std::vector<float> out(31);
  EXPECT_THROW(dequantize(GgmlType::kQ8_0, blocks, out), std::invalid_argument);
}

TEST(ParseGguf, AcceptsVersion2AndRejectsOthers) {
  const auto mapped = types_file();
  std::vector<std::byte> bytes(mapped.bytes().begin(), mapped.bytes().end());
  bytes[4] = std::byte{2};
  EXPECT_EQ(parse_gguf(bytes, kLabel).version, 2u);
  bytes[4] = std::byte{1};
  EXPECT_THAT(parse_error(bytes), HasSubstr("GGUF version 1 is not supported"));
  bytes[4] = std::byte{0};
  bytes[7] = std::byte{3};
  EXPECT_THAT(parse_error(bytes), HasSubstr("big-endian"));
}

TEST(ParseGguf, EveryTruncationIsALoadError) {
  const auto mapped = types_file();
  const auto bytes = mapped.bytes();
  // Every prefix through the header, then a sample of the data section (whose tensors end past
  // each cut).
  for (std::size_t size = 0; size < bytes.size(); size += size < 4096 ? 1 : 997) {
    SCOPED_TRACE(size);
    EXPECT_THROW(parse_gguf(bytes.first(size), kLabel), LoadError);
  }
}

TEST(ParseGguf, RejectsAFileThatIsNotGguf) {
  GgufBytes file;
  file.u32(0x46554746).u32(3).u64(0).u64(0);
  EXPECT_THAT(parse_error(file.bytes()), HasSubstr("not a GGUF file"));
}

TEST(ParseGguf, ReadsAnEmptyFileOfNoTensors) {
  GgufBytes file;
  file.header(0, 1).key_u32("general.alignment", 16);
  const auto parsed = parse_gguf(file.bytes(), kLabel);
  EXPECT_EQ(parsed.alignment, 16u);
  EXPECT_TRUE(parsed.tensors.empty());
}

TEST(ParseGguf, RejectsBadMetadata) {
  {
    GgufBytes file;
    file.header(0, 2).key_u32("a.key", 1).key_u32("a.key", 2);
    EXPECT_THAT(parse_error(file.bytes()), HasSubstr("key 'a.key' appears twice"));
  }
  {
    GgufBytes file;
    file.header(0, 1).str("a.key").u32(13).u32(0);
    EXPECT_THAT(parse_error(file.bytes()), HasSubstr("the value type of key 'a.key' 13"));
  }
  {
    GgufBytes file;
    file.header(0, 1).str("a.flag").u32(static_cast<uint32_t>(GgufType::kBool)).u8(2);
    EXPECT_THAT(parse_error(file.bytes()), HasSubstr("'a.flag' is a bool of byte value 2"));
  }
  {
    GgufBytes file;
    file.header(0, 1).str("a.text").u32(static_cast<uint32_t>(GgufType::kString)).u64(~uint64_t{0});
    EXPECT_THAT(parse_error(file.bytes()), HasSubstr("'a.text'"));
  }
  {
    GgufBytes file;  // an array claiming 2^61 strings
    file.header(0, 1).str("a.list").u32(static_cast<uint32_t>(GgufType::kArray));
    file.u32(static_cast<uint32_t>(GgufType::kString)).u64(uint64_t{1} << 61);
    EXPECT_THAT(parse_error(file.bytes()), HasSubstr("key 'a.list': array length"));
  }
  {
    GgufBytes file;  // more metadata entries than the file could hold
    file.header(0, uint64_t{1} << 40);
    EXPECT_THAT(parse_error(file.bytes()), HasSubstr("metadata count"));
  }
  {
    GgufBytes file;  // arrays nested past the cap
    file.header(0, 1).str("a.deep").u32(static_cast<uint32_t>(GgufType::kArray));
    for (int depth = 0; depth < kGgufMaxArrayDepth + 2; ++depth) {
      file.u32(static_cast<uint32_t>(GgufType::kArray)).u64(1);
    }
    file.zeros(64);
    EXPECT_THAT(parse_error(file.bytes()), HasSubstr("'a.deep' nests arrays deeper"));
  }
  {
    GgufBytes file;
    file.header(0, 1).key_u32("general.alignment", 48);
    EXPECT_THAT(parse_error(file.bytes()), HasSubstr("key 'general.alignment' is 48, expected a power of two"));
  }
  {
    GgufBytes file;
    file.header(0, 1).str("general.alignment").u32(static_cast<uint32_t>(GgufType::kUint64)).u64(32);
    EXPECT_THAT(parse_error(file.bytes()), HasSubstr("'general.alignment' is a uint64, expected uint32"));
  }
}

constexpr uint32_t kF32 = 0;

TEST(ParseGguf, PlacesTensorsAtTheirAlignedOffsets) {
  GgufBytes file;
  file.header(2, 0).tensor("a", {3}, kF32, 0).tensor("b", {2, 2}, kF32, 32).pad_to(32);
  file.f32(1).f32(2).f32(3).zeros(20).f32(4).f32(5).f32(6).f32(7);
  const auto parsed = parse_gguf(file.bytes(), kLabel);
  ASSERT_EQ(parsed.tensors.size(), 2u);
  EXPECT_THAT(parsed.tensors[1].shape(), ElementsAre(2, 2));
  EXPECT_THAT(dequantize(parsed.tensors[0]), ElementsAre(1, 2, 3));
  EXPECT_THAT(dequantize(parsed.tensors[1]), ElementsAre(4, 5, 6, 7));
}

TEST(ParseGguf, RejectsBadTensorInfo) {
  const auto error_for = [](auto build) {
    GgufBytes file;
    build(file);
    file.pad_to(32).zeros(4096);
    return parse_error(file.bytes());
  };
  EXPECT_THAT(error_for([](GgufBytes& f) { f.header(2, 0).tensor("t", {1}, kF32, 0).tensor("t", {1}, kF32, 32); }),
              HasSubstr("tensor 't': appears twice"));
  EXPECT_THAT(error_for([](GgufBytes& f) {
                f.header(1, 0).tensor("t", {1, 1, 1, 1, 1}, kF32, 0);
              }),
              HasSubstr("tensor 't': 5 dimensions"));
  EXPECT_THAT(error_for([](GgufBytes& f) { f.header(1, 0).tensor("t", {32}, 3, 0); }),
              HasSubstr("tensor 't': has type Q4_1 (type id 3), which s1serve does not read"));
  EXPECT_THAT(error_for([](GgufBytes& f) { f.header(1, 0).tensor("t", {32}, 1000, 0); }),
              HasSubstr("unknown type id 1000"));
  EXPECT_THAT(error_for([](GgufBytes& f) {
                f.header(1, 0).tensor("t", {48, 2}, 12, 0);
              }),
              HasSubstr("innermost dimension 48 is not a multiple of the Q4_K block size 256"));
  EXPECT_THAT(error_for([](GgufBytes& f) {
                f.header(1, 0).tensor("t", {uint64_t{1} << 32, uint64_t{1} << 32}, kF32, 0);
              }),
              HasSubstr("tensor 't': dimensions overflow"));
  EXPECT_THAT(error_for([](GgufBytes& f) { f.header(1, 0).tensor("t", {uint64_t{1} << 40}, kF32, 0); }),
              HasSubstr("tensor 't': needs more bytes than the file holds"));
  // Overlapping and misplaced tensors: anything but the running aligned offset.
  EXPECT_THAT(error_for([](GgufBytes& f) { f.header(2, 0).tensor("a", {16}, kF32, 0).tensor("b", {4}, kF32, 0); }),
              HasSubstr("tensor 'b' has data offset 0, expected 64"));
  EXPECT_THAT(error_for([](GgufBytes& f) { f.header(1, 0).tensor("a", {4}, kF32, 8); }),
              HasSubstr("tensor 'a' has data offset 8, expected 0"));
  EXPECT_THAT(error_for([](GgufBytes& f) { f.header(1, 0).tensor("a", {1030}, kF32, 0); }),
              HasSubstr("tensor 'a': data (4120 bytes at offset 0) runs past the end of the file"));
}

// The GGUF keys of a Qwen3 model become config.json keys; any other key of the architecture may
// change the maths, so it is refused by name rather than ignored.
TEST(GgufConfig, RefusesArchitectureKeysItDoesNotKnow) {
  const auto error_for = [](auto build) {
    GgufBytes bytes;
    build(bytes);
    const auto file = parse_gguf(bytes.bytes(), kLabel);
    try {
      gguf_config(file);
    } catch (const LoadError& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(
      error_for([](GgufBytes& b) {
        b.header(0, 2).key_string("general.architecture", "qwen3").key_string("qwen3.rope.scaling.type", "yarn");
      }),
      HasSubstr("key 'qwen3.rope.scaling.type' is a setting s1serve does not implement"));
  EXPECT_THAT(error_for([](GgufBytes& b) {
                b.header(0, 3).key_string("general.architecture", "qwen3");
                b.key_u32("qwen3.attention.key_length", 64).key_u32("qwen3.attention.value_length", 32);
              }),
              HasSubstr("key 'qwen3.attention.value_length' must equal qwen3.attention.key_length"));
  EXPECT_THAT(error_for([](GgufBytes& b) {
                b.header(0, 2).key_string("general.architecture", "qwen35");
                b.key_u32("qwen35.attention.recurrent_layers", 1);
              }),
              HasSubstr("key 'qwen35.attention.recurrent_layers' must be an array of bools"));
  EXPECT_THAT(error_for([](GgufBytes& b) { b.header(0, 1).key_string("general.architecture", "llama"); }),
              HasSubstr("only 'qwen3', 'qwen35' and 'lfm2' GGUF files load for now"));
}

}  // namespace
}  // namespace s1::checkpoint
