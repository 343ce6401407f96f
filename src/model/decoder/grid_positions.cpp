#include "model/decoder/grid_positions.h"

#include <algorithm>

namespace s1::decoder {

GridPositions grid_positions(std::size_t length, std::span<const ImageRows> images, int64_t start) {
  GridPositions out;
  out.t.reserve(length);
  out.h.reserve(length);
  out.w.reserve(length);
  int64_t position = start;
  const auto text_until = [&](std::size_t end) {
    while (out.t.size() < end) {
      out.t.push_back(position);
      out.h.push_back(position);
      out.w.push_back(position);
      ++position;
    }
  };
  for (const ImageRows& image : images) {
    text_until(image.first);
    for (std::size_t frame = 0; frame < image.frames; ++frame) {
      for (std::size_t row = 0; row < image.height; ++row) {
        for (std::size_t column = 0; column < image.width; ++column) {
          out.t.push_back(position + static_cast<int64_t>(frame));
          out.h.push_back(position + static_cast<int64_t>(row));
          out.w.push_back(position + static_cast<int64_t>(column));
        }
      }
    }
    position += static_cast<int64_t>(std::max(image.height, image.width));
  }
  text_until(length);
  out.next = position;
  return out;
}

}  // namespace s1::decoder
