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
  std::vector<decoder::ImageRows> runs;
  for (std::size_t i = 0; i < ids.size();) {
    if (ids[i] != image_token_id) {
      ++i;
      continue;
    }
    std::size_t run = i;
    while (run < ids.size() && ids[run] == image_token_id) ++run;
    if (runs.size() == grids.size()) throw std::invalid_argument("more image token runs than images");
    const Grid& grid = grids[runs.size()];
    if (static_cast<int64_t>(run - i) != image_token_count(grid, merge)) {
      throw std::invalid_argument("an image token run of " + std::to_string(run - i) + " for an image of " +
                                  std::to_string(image_token_count(grid, merge)) + " tokens");
    }
    runs.push_back({.first = i,
                    .rows = {},
                    .frames = static_cast<std::size_t>(grid.t),
                    .height = static_cast<std::size_t>(grid.h / merge),
                    .width = static_cast<std::size_t>(grid.w / merge)});
    i = run;
  }
  if (runs.size() != grids.size()) throw std::invalid_argument("fewer image token runs than images");
  return decoder::grid_positions(ids.size(), runs, 0);
}

}  // namespace s1::qwen3_5_vision
