#pragma once

#include <cstdint>
#include <vector>

namespace s1::vision {

// A decoded still as the preprocessing reads it: 8-bit RGB, rows top to bottom, pixels interleaved
// R, G, B, already turned by its EXIF orientation. Decoders produce this whatever the file's mode was
// (palette, alpha, 16-bit, CMYK), converted the way the reference's PIL `convert("RGB")` does.
struct Image {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> rgb;  // width * height * 3 bytes
};

}  // namespace s1::vision
