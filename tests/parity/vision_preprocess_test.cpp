// Qwen2-VL / Qwen3.5 image preprocessing vs Transformers' Qwen2VLImageProcessorPil on 115 generated
// images of odd sizes (tools/reference/make_vision_preprocess_fixtures.py →
// tests/parity/vision/preprocess.json): grid_thw, every pixel value (by CRC-32, sampled values and
// one full array) and Pillow's resized bytes must match exactly; refused images must be refused.

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "model/checkpoint/config_reader.h"
#include "model/checkpoint/load_error.h"
#include "vision/preprocess.h"
#include "vision/preprocessor_config.h"
#include "vision/resample.h"

namespace s1::vision {
namespace {

std::filesystem::path fixture_file() {
  const char* source = std::getenv("S1SERVE_SOURCE_DIR");
  return std::filesystem::path(source != nullptr ? source : S1SERVE_SOURCE_DIR_FALLBACK) / "tests" / "parity" /
         "vision" / "preprocess.json";
}

const nlohmann::json& fixtures() {
  static const nlohmann::json root = [] {
    std::ifstream in(fixture_file());
    if (!in) throw std::runtime_error("missing " + fixture_file().string());
    return nlohmann::json::parse(in);
  }();
  return root;
}

// The generator's `pattern`, in the same 32-bit wrapping arithmetic.
Image pattern(int width, int height, uint32_t seed) {
  Image image{.width = width, .height = height, .rgb = std::vector<uint8_t>(std::size_t{3} * width * height)};
  const uint32_t mask = seed % 4 == 0 ? 255 : 15;
  for (uint32_t y = 0; y < static_cast<uint32_t>(height); ++y) {
    for (uint32_t x = 0; x < static_cast<uint32_t>(width); ++x) {
      for (uint32_t c = 0; c < 3; ++c) {
        uint32_t h = (x * 73856093U) ^ (y * 19349663U) ^ (c * 83492791U) ^ (seed * 2654435761U);
        h ^= h >> 13;
        h *= 0x5BD1E995U;
        h ^= h >> 15;
        const uint64_t grad = uint64_t{x} * 256 / static_cast<uint64_t>(width) +
                              uint64_t{y} * 128 / static_cast<uint64_t>(height) + uint64_t{c} * 64;
        image.rgb[(std::size_t{y} * width + x) * 3 + c] = static_cast<uint8_t>((grad + (h & mask)) & 255);
      }
    }
  }
  return image;
}

uint32_t crc32_of(const void* data, std::size_t bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const auto* p = static_cast<const Bytef*>(data);
  while (bytes > 0) {
    const auto chunk = static_cast<uInt>(std::min<std::size_t>(bytes, 1U << 30));
    crc = crc32(crc, p, chunk);
    p += chunk;
    bytes -= chunk;
  }
  return static_cast<uint32_t>(crc);
}

PreprocessorConfig config_named(const std::string& name) {
  return read_preprocessor_config(
      checkpoint::ConfigReader(nlohmann::ordered_json(fixtures().at("configs").at(name)), "preprocess.json " + name));
}

TEST(VisionPreprocess, MatchesTransformersOnGeneratedImages) {
  const nlohmann::json& cases = fixtures().at("cases");
  ASSERT_GE(cases.size(), 100U);
  for (const nlohmann::json& c : cases) {
    const std::string name = c.at("config").get<std::string>() + " " + std::to_string(c.at("width").get<int>()) + "x" +
                             std::to_string(c.at("height").get<int>());
    SCOPED_TRACE(name);
    const PreprocessorConfig config = config_named(c.at("config"));
    const Image image = pattern(c.at("width"), c.at("height"), c.at("seed"));
    if (c.contains("error")) {
      EXPECT_THROW((void)preprocess(image, config), PreprocessError);
      continue;
    }
    const Patches patches = preprocess(image, config);
    const auto grid = c.at("grid_thw").get<std::vector<int64_t>>();
    ASSERT_EQ(patches.grid_t, grid[0]);
    ASSERT_EQ(patches.grid_h, grid[1]);
    ASSERT_EQ(patches.grid_w, grid[2]);
    const auto shape = c.at("shape").get<std::vector<int64_t>>();
    ASSERT_EQ(patches.patch_values, shape[1]);
    ASSERT_EQ(static_cast<int64_t>(patches.values.size()), shape[0] * shape[1]);

    const Image resized = resize_bicubic(image, static_cast<int>(grid[2] * config.patch_size),
                                         static_cast<int>(grid[1] * config.patch_size));
    EXPECT_EQ(crc32_of(resized.rgb.data(), resized.rgb.size()), c.at("resized_crc32").get<uint32_t>())
        << "Pillow's resized pixels differ";
    for (const nlohmann::json& sample : c.at("samples")) {
      const auto index = sample[0].get<std::size_t>();
      ASSERT_EQ(patches.values.at(index), sample[1].get<float>()) << "value " << index;
    }
    EXPECT_EQ(crc32_of(patches.values.data(), patches.values.size() * sizeof(float)),
              c.at("values_crc32").get<uint32_t>());
    if (c.contains("values")) {
      const auto values = c.at("values").get<std::vector<float>>();
      ASSERT_EQ(values.size(), patches.values.size());
      for (std::size_t i = 0; i < values.size(); ++i) ASSERT_EQ(patches.values[i], values[i]) << "value " << i;
    }
  }
}

TEST(VisionPreprocess, SmartResizeRoundsHalfToEvenLikePython) {
  // 48 / 32 = 1.5 → 2 and 80 / 32 = 2.5 → 2 (Python's round), inside the budget.
  const ResizedSize size = smart_resize(48, 80, 32, 32 * 32, 1 << 20);
  EXPECT_EQ(size.height, 64);
  EXPECT_EQ(size.width, 64);
  EXPECT_THROW((void)smart_resize(1, 201, 32, 1024, 1 << 20), PreprocessError);
  EXPECT_NO_THROW((void)smart_resize(1, 200, 32, 1024, 1 << 20));
  // A budget that would blow a side past 2^20 pixels is refused, not overflowed.
  EXPECT_THROW((void)smart_resize(1, 100, 32, int64_t{1} << 50, int64_t{1} << 51), PreprocessError);
}

checkpoint::ConfigReader reader(const char* json) {
  return checkpoint::ConfigReader(nlohmann::ordered_json::parse(json), "preprocessor_config.json");
}

TEST(VisionPreprocessorConfig, ReadsTheBudgetAndDefaults) {
  const PreprocessorConfig config =
      read_preprocessor_config(reader(R"({"size": {"longest_edge": 16777216, "shortest_edge": 65536}, "patch_size": 16,
                 "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
                 "processor_class": "Qwen3VLProcessor", "image_processor_type": "Qwen2VLImageProcessorFast"})"));
  EXPECT_EQ(config.min_pixels, 65536);
  EXPECT_EQ(config.max_pixels, 16777216);
  EXPECT_EQ(config.patch_size, 16);
  EXPECT_EQ(config.temporal_patch_size, 2);
  EXPECT_EQ(config.merge_size, 2);
  EXPECT_EQ(config.rescale_factor, 1.0 / 255.0);
  EXPECT_EQ(config.image_mean[1], 0.5F);
  // The legacy top-level keys override size, as Transformers' constructor does.
  EXPECT_EQ(read_preprocessor_config(reader(R"({"min_pixels": 100, "max_pixels": 200})")).max_pixels, 200);
}

TEST(VisionPreprocessorConfig, RefusesSettingsThatChangeThePixels) {
  for (const char* json :
       {R"({"resample": 2})", R"({"do_resize": false})", R"({"do_convert_rgb": false})", R"({"do_center_crop": true})",
        R"({"image_mean": [0.5, 0.5]})", R"({"image_std": [0.5, 0.0, 0.5]})",
        R"({"size": {"height": 224, "width": 224}})", R"({"min_pixels": 4096, "max_pixels": 1024})",
        R"({"patch_size": 0})", R"({"image_processor_type": "SiglipImageProcessor"})", R"({"crop_pct": 0.9})"}) {
    SCOPED_TRACE(json);
    EXPECT_THROW((void)read_preprocessor_config(reader(json)), checkpoint::LoadError);
  }
}

TEST(VisionResample, RefusesEmptySizes) {
  const Image image = pattern(4, 4, 1);
  EXPECT_THROW((void)resize_bicubic(image, 0, 4), std::invalid_argument);
  EXPECT_EQ(resize_bicubic(image, 4, 4).rgb, image.rgb);
}

}  // namespace
}  // namespace s1::vision
