#pragma once
// The decoder side of an image in a Qwen3.5 prompt: its placeholder expanded to one pad token per
// merged patch, and the 3-D (M-RoPE) positions Transformers' Qwen3_5Model.get_rope_index gives the
// prompt: text tokens (t, h, w) = (p, p, p); an image's tokens (s, s + row, s + column) over its
// merged grid, s the position after the text before it; the text after the image resumes at
// s + max(merged rows, merged columns), not at s + its token count.

#include <cstdint>
#include <span>
#include <vector>

#include "model/decoder/grid_positions.h"
#include "model/qwen3_5_vision/vision_tower.h"

namespace s1::qwen3_5_vision {

// The language-model tokens of one image: (t · h · w) / merge².
[[nodiscard]] int64_t image_token_count(const Grid& grid, int64_t merge);

// Each occurrence of image_token_id (the chat template's single <|image_pad|> per image, in image
// order) repeated image_token_count times. std::invalid_argument when the occurrences and the
// grids differ in number.
[[nodiscard]] std::vector<int32_t> expand_image_placeholders(std::span<const int32_t> ids, int32_t image_token_id,
                                                             std::span<const Grid> grids, int64_t merge);

using MropePositions = decoder::GridPositions;

// Positions of an expanded prompt; each run of image tokens must hold its grid's token count, runs
// and grids in the same order and number (std::invalid_argument otherwise).
[[nodiscard]] MropePositions mrope_positions(std::span<const int32_t> ids, int32_t image_token_id,
                                             std::span<const Grid> grids, int64_t merge);

}  // namespace s1::qwen3_5_vision
