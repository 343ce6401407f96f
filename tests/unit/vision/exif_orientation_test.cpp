#include "vision/exif_orientation.h"

#include <gtest/gtest.h>

#include <string>

namespace s1::vision {
namespace {

// An IFD0 holding one entry, little-endian ("II") or big-endian ("MM").
std::string tiff_with_entry(bool big_endian, uint16_t tag, uint16_t type, uint32_t value) {
  auto u16 = [big_endian](uint16_t v) {
    return big_endian ? std::string{char(v >> 8), char(v & 0xff)} : std::string{char(v & 0xff), char(v >> 8)};
  };
  auto u32 = [&](uint32_t v) {
    return big_endian ? u16(uint16_t(v >> 16)) + u16(uint16_t(v)) : u16(uint16_t(v)) + u16(uint16_t(v >> 16));
  };
  std::string value_field = type == 3 ? u16(uint16_t(value)) + u16(0) : u32(value);
  return std::string(big_endian ? "MM" : "II") + u16(42) + u32(8) + u16(1) + u16(tag) + u16(type) + u32(1) +
         value_field + u32(0);
}

TEST(ExifOrientation, ReadsTheTagInBothByteOrders) {
  EXPECT_EQ(exif_orientation(tiff_with_entry(false, 0x0112, 3, 6)), 6);
  EXPECT_EQ(exif_orientation(tiff_with_entry(true, 0x0112, 3, 8)), 8);
  EXPECT_EQ(exif_orientation(std::string("Exif\0\0", 6) + tiff_with_entry(true, 0x0112, 3, 3)), 3);
  EXPECT_EQ(exif_orientation(tiff_with_entry(false, 0x0112, 4, 5)), 5);
}

TEST(ExifOrientation, AnythingElseIsAsStored) {
  EXPECT_EQ(exif_orientation(""), 1);
  EXPECT_EQ(exif_orientation(tiff_with_entry(false, 0x0110, 3, 6)), 1);  // another tag
  EXPECT_EQ(exif_orientation(tiff_with_entry(false, 0x0112, 3, 9)), 1);  // out of range
  EXPECT_EQ(exif_orientation(tiff_with_entry(false, 0x0112, 2, 6)), 1);  // ASCII type
  std::string truncated = tiff_with_entry(false, 0x0112, 3, 6);
  // The value ends at byte 20.
  for (size_t length = 0; length < 20; ++length) {
    EXPECT_EQ(exif_orientation(truncated.substr(0, length)), 1) << length;
  }
  std::string far_ifd = tiff_with_entry(false, 0x0112, 3, 6);
  far_ifd[4] = '\xff';
  far_ifd[7] = '\x7f';
  EXPECT_EQ(exif_orientation(far_ifd), 1);
}

TEST(ApplyOrientation, TurnsAsPilTransposes) {
  // 3x2:  a b c
  //       d e f
  const std::string stored = "aaabbbcccdddeeefff";
  const Image image{3, 2, std::vector<uint8_t>(stored.begin(), stored.end())};
  auto letters = [](const Image& turned) {
    std::string out;
    for (size_t i = 0; i < turned.rgb.size(); i += 3) out += char(turned.rgb[i]);
    return std::to_string(turned.width) + "x" + std::to_string(turned.height) + ":" + out;
  };
  EXPECT_EQ(letters(apply_orientation(image, 1)), "3x2:abcdef");
  EXPECT_EQ(letters(apply_orientation(image, 2)), "3x2:cbafed");
  EXPECT_EQ(letters(apply_orientation(image, 3)), "3x2:fedcba");
  EXPECT_EQ(letters(apply_orientation(image, 4)), "3x2:defabc");
  EXPECT_EQ(letters(apply_orientation(image, 5)), "2x3:adbecf");
  EXPECT_EQ(letters(apply_orientation(image, 6)), "2x3:daebfc");
  EXPECT_EQ(letters(apply_orientation(image, 7)), "2x3:fcebda");
  EXPECT_EQ(letters(apply_orientation(image, 8)), "2x3:cfbead");
}

}  // namespace
}  // namespace s1::vision
