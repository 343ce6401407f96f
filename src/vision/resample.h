#pragma once
// Pillow's antialiased bicubic resize (Image.resize(..., Resampling.BICUBIC), libImaging/Resample.c),
// reproduced to the bit: the Qwen VL image processors resize with PIL, so any other filter, support
// or rounding changes the pixels the vision tower was trained on.

#include "vision/image.h"

namespace s1::vision {

// `image` resized to width × height (both ≥ 1; std::invalid_argument otherwise). As Pillow does: the
// Keys cubic (a = −0.5) widened by the scale when shrinking (the antialiasing), one
// pass per changed axis through an 8-bit intermediate, in Pillow 13's order, coefficients in 22-bit fixed point
// rounded half away from zero, sums rounded half up and clipped to [0, 255]; an unchanged dimension
// skips its pass.
[[nodiscard]] Image resize_bicubic(const Image& image, int width, int height);

}  // namespace s1::vision
