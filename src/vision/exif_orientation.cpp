#include "vision/exif_orientation.h"

#include <cstdint>
#include <optional>

namespace s1::vision {
namespace {

constexpr std::string_view exif_prefix{"Exif\0\0", 6};
constexpr uint16_t orientation_tag = 0x0112;
constexpr uint16_t type_short = 3;
constexpr uint16_t type_long = 4;
constexpr size_t ifd_entry_bytes = 12;

class TiffReader {
 public:
  explicit TiffReader(std::string_view data, bool big_endian) : data_(data), big_endian_(big_endian) {}

  std::optional<uint32_t> u16(size_t offset) const { return read(offset, 2); }
  std::optional<uint32_t> u32(size_t offset) const { return read(offset, 4); }

 private:
  std::optional<uint32_t> read(size_t offset, size_t width) const {
    if (offset > data_.size() || data_.size() - offset < width) return std::nullopt;
    uint32_t value = 0;
    for (size_t i = 0; i < width; ++i) {
      const auto byte = static_cast<uint8_t>(data_[offset + (big_endian_ ? i : width - 1 - i)]);
      value = (value << 8) | byte;
    }
    return value;
  }

  std::string_view data_;
  bool big_endian_;
};

}  // namespace

int exif_orientation(std::string_view exif) {
  if (exif.starts_with(exif_prefix)) exif.remove_prefix(exif_prefix.size());
  bool big_endian = false;
  if (exif.starts_with(std::string_view("MM\0*", 4))) {
    big_endian = true;
  } else if (!exif.starts_with(std::string_view("II*\0", 4))) {
    return 1;
  }
  const TiffReader tiff(exif, big_endian);
  const std::optional<uint32_t> ifd = tiff.u32(4);
  if (!ifd) return 1;
  const std::optional<uint32_t> count = tiff.u16(*ifd);
  if (!count) return 1;
  for (uint32_t entry = 0; entry < *count; ++entry) {
    const size_t at = size_t{*ifd} + 2 + size_t{entry} * ifd_entry_bytes;
    const std::optional<uint32_t> tag = tiff.u16(at);
    const std::optional<uint32_t> type = tiff.u16(at + 2);
    if (!tag || !type) return 1;
    if (*tag != orientation_tag) continue;
    // The value sits in the entry itself: a SHORT in its first two bytes, a LONG in all four.
    std::optional<uint32_t> value;
    if (*type == type_short) value = tiff.u16(at + 8);
    if (*type == type_long) value = tiff.u32(at + 8);
    return value && *value >= 1 && *value <= 8 ? static_cast<int>(*value) : 1;
  }
  return 1;
}

Image apply_orientation(Image image, int orientation) {
  if (orientation < 2 || orientation > 8) return image;
  const int width = image.width;
  const int height = image.height;
  const bool swaps = orientation >= 5;
  Image turned;
  turned.width = swaps ? height : width;
  turned.height = swaps ? width : height;
  turned.rgb.resize(image.rgb.size());
  for (int y = 0; y < turned.height; ++y) {
    for (int x = 0; x < turned.width; ++x) {
      int source_x = x;
      int source_y = y;
      switch (orientation) {
        case 2:
          source_x = width - 1 - x;
          break;
        case 3:
          source_x = width - 1 - x;
          source_y = height - 1 - y;
          break;
        case 4:
          source_y = height - 1 - y;
          break;
        case 5:
          source_x = y;
          source_y = x;
          break;
        case 6:
          source_x = y;
          source_y = height - 1 - x;
          break;
        case 7:
          source_x = width - 1 - y;
          source_y = height - 1 - x;
          break;
        case 8:
          source_x = width - 1 - y;
          source_y = x;
          break;
      }
      const size_t from = (static_cast<size_t>(source_y) * width + source_x) * 3;
      const size_t to = (static_cast<size_t>(y) * turned.width + x) * 3;
      turned.rgb[to] = image.rgb[from];
      turned.rgb[to + 1] = image.rgb[from + 1];
      turned.rgb[to + 2] = image.rgb[from + 2];
    }
  }
  return turned;
}

}  // namespace s1::vision
