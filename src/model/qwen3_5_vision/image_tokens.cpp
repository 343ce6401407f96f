#include "model/qwen3_5_vision/image_tokens.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace s1::qwen3_5_vision {

int64_t image_token_count(const Grid& grid, int64_t merge) { return grid.t * grid.h * grid.w / (merge * merge); }

std::vector<int32_t> expand_image_placeholders(std::span<const int32_t> ids, int32_t image_token_id,
                                               std::span<const Grid> grids, int64_t merge) {
  const auto placeholders = static_cast<std::size_t>(std::ranges::count(ids, image_token_id));
  if (placeholders != grids.size()) {
    throw std::invalid_argument("the prompt has " + std::to_string(placeholders) + " image placeholders for " +
                                std::to_string(grids.size()) + " images");
  }
  std::vector<int32_t> expanded;
  std::size_t image = 0;
  for (const int32_t id : ids) {
    if (id != image_token_id) {
      expanded.push_back(id);
      continue;
    }
    expanded.insert(expanded.end(), static_cast<std::size_t>(image_token_count(grids[image++], merge)), id);
  }
  return expanded;
}

MropePositions mrope_positions(std::span<const int32_t> ids, int32_t image_token_id, std::span<const Grid> grids,
                               int64_t merge) {
  MropePositions out;
  int64_t position = 0;
  std::size_t image = 0;
  for (std::size_t i = 0; i < ids.size();) {
    if (ids[i] != image_token_id) {
      out.t.push_back(position);
      out.h.push_back(position);
      out.w.push_back(position);
      ++position, ++i;
      continue;
    }
    std::size_t run = i;
    while (run < ids.size() && ids[run] == image_token_id) ++run;
    if (image == grids.size()) throw std::invalid_argument("more image token runs than images");
    const Grid& grid = grids[image++];
    const int64_t rows = grid.h / merge, columns = grid.w / merge;
    if (static_cast<int64_t>(run - i) != image_token_count(grid, merge)) {
      throw std::invalid_argument("an image token run of " + std::to_string(run - i) + " for an image of " +
                                  std::to_string(image_token_count(grid, merge)) + " tokens");
    }
    for (int64_t frame = 0; frame < grid.t; ++frame) {
      for (int64_t row = 0; row < rows; ++row) {
        for (int64_t column = 0; column < columns; ++column) {
          out.t.push_back(position + frame);
          out.h.push_back(position + row);
          out.w.push_back(position + column);
        }
      }
    }
    position += std::max(rows, columns);
    i = run;
  }
  if (image != grids.size()) throw std::invalid_argument("fewer image token runs than images");
  out.next = position;
  return out;
}

}  // namespace s1::qwen3_5_vision
