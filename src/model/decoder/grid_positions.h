#pragma once
// 3-D (M-RoPE) positions of a branch whose images lie on token grids, as Transformers'
// Qwen2/3-VL get_rope_index gives them: a text token's (t, h, w) = (p, p, p); an image's tokens
// (s + frame, s + row, s + column) over its grid, s the position after the text before it; the text
// after the image resumes at s + max(height, width) (for a still, one frame: the largest position so
// far + 1), not at s + its token count.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "model/decoder/causal_decoder.h"

namespace s1::decoder {

struct GridPositions {
  std::vector<int64_t> t, h, w;  // one per token
  int64_t next = 0;              // the position of a token appended after the last
};

// Positions of `length` tokens, the first at `start`, with `images` (runs inside the tokens, in
// order, not overlapping: check_branches checks a branch's) on their grids.
[[nodiscard]] GridPositions grid_positions(std::size_t length, std::span<const ImageRows> images, int64_t start);

}  // namespace s1::decoder
