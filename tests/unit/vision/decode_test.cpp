// Every committed fixture decoded against the reference loader's pixels (tools/reference/
// make_image_fixtures.py: PIL exif_transpose, then convert("RGB")), and every broken one refused.

#include "vision/decode.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <iterator>

#include "support/fixtures.h"

namespace s1::vision {
namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

constexpr uint64_t twenty_megapixels = 20'000'000;

TEST(DecodeImage, EveryModeGivesTheReferencePixels) {
  const auto dir = test::fixture_dir("images");
  const api::Json expected = test::read_json(dir / "expected.json");
  ASSERT_GE(expected.size(), 30u);
  for (const api::Json& entry : expected) {
    const std::string file = entry.at("file");
    SCOPED_TRACE(file);
    auto decoded = decode_image(read_file(dir / file), twenty_megapixels);
    ASSERT_TRUE(std::holds_alternative<Image>(decoded)) << std::get<DecodeFailure>(decoded).reason;
    const Image& image = std::get<Image>(decoded);
    EXPECT_EQ(image.width, entry.at("width").get<int>());
    EXPECT_EQ(image.height, entry.at("height").get<int>());
    const std::string reference = read_file(dir / (file + ".rgb"));
    ASSERT_EQ(image.rgb.size(), reference.size());
    const int tolerance = entry.at("tolerance").get<int>();
    int worst = 0;
    for (size_t i = 0; i < reference.size(); ++i) {
      worst = std::max(worst, std::abs(int{image.rgb[i]} - int{static_cast<uint8_t>(reference[i])}));
    }
    EXPECT_LE(worst, tolerance);
  }
}

TEST(DecodeImage, BrokenFilesAreRefusedWithTheirReason) {
  const auto dir = test::fixture_dir("images");
  const api::Json bad = test::read_json(dir / "bad.json");
  for (const api::Json& entry : bad) {
    const std::string file = entry.at("file");
    SCOPED_TRACE(file);
    auto decoded = decode_image(read_file(dir / file), twenty_megapixels);
    ASSERT_TRUE(std::holds_alternative<DecodeFailure>(decoded));
    EXPECT_NE(std::get<DecodeFailure>(decoded).reason.find(entry.at("reason").get<std::string>()), std::string::npos)
        << std::get<DecodeFailure>(decoded).reason;
  }
}

TEST(DecodeImage, APixelBombIsRefusedFromItsHeaderInMicroseconds) {
  const std::string bomb = read_file(test::fixture_dir("images") / "bomb.png");
  const auto started = std::chrono::steady_clock::now();
  auto decoded = decode_image(bomb, twenty_megapixels);
  const auto elapsed = std::chrono::steady_clock::now() - started;
  ASSERT_TRUE(std::holds_alternative<DecodeFailure>(decoded));
  // Decoding 10^10 pixels would take minutes and 30 GB; the header alone takes microseconds (the
  // bound leaves room for a loaded machine).
  EXPECT_LT(elapsed, std::chrono::milliseconds(50));
}

TEST(DecodeImage, ThePixelLimitIsTheCallers) {
  const std::string png = read_file(test::fixture_dir("images") / "rgb8.png");
  EXPECT_TRUE(std::holds_alternative<Image>(decode_image(png, 13 * 7)));
  auto refused = decode_image(png, 13 * 7 - 1);
  ASSERT_TRUE(std::holds_alternative<DecodeFailure>(refused));
  EXPECT_EQ(std::get<DecodeFailure>(refused).reason, "it is 13x7 pixels, over the limit of 90 pixels per image");
}

TEST(ImageFormat, SniffedFromMagicBytes) {
  EXPECT_EQ(sniff_image_format("\x89PNG\r\n\x1a\nrest"), ImageFormat::png);
  EXPECT_EQ(sniff_image_format("\xff\xd8\xff\xe0"), ImageFormat::jpeg);
  EXPECT_EQ(sniff_image_format(std::string_view("RIFF\x10\0\0\0WEBPVP8 ", 16)), ImageFormat::webp);
  EXPECT_EQ(sniff_image_format(std::string_view("RIFF\x10\0\0\0WAVEfmt ", 16)), std::nullopt);
  EXPECT_EQ(sniff_image_format("GIF89a"), std::nullopt);
  EXPECT_EQ(sniff_image_format(""), std::nullopt);
}

TEST(ImageHeader, ReadWithoutDecoding) {
  auto header = read_image_header(read_file(test::fixture_dir("images") / "bomb.jpg"));
  ASSERT_TRUE(std::holds_alternative<ImageHeader>(header));
  EXPECT_EQ(std::get<ImageHeader>(header).format, ImageFormat::jpeg);
  EXPECT_EQ(std::get<ImageHeader>(header).width, 60000);
  EXPECT_EQ(std::get<ImageHeader>(header).height, 60000);
}

}  // namespace
}  // namespace s1::vision
