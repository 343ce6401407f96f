#pragma once
// The EXIF Orientation tag (0x0112) and the turn it asks for, as PIL's ImageOps.exif_transpose
// applies it before the reference converts an image to RGB.

#include <string_view>

#include "vision/image.h"

namespace s1::vision {

// 1–8 from IFD0 of an EXIF block (a TIFF structure, optionally after "Exif\0\0"); 1 (as stored)
// when the block is absent, malformed or has no valid tag. Every offset is bounds-checked.
int exif_orientation(std::string_view exif);

// The image turned so that orientation 1 holds: 2 mirror, 3 rotate 180°, 4 flip, 5 transpose, 6
// rotate 90° clockwise, 7 transverse, 8 rotate 90° counter-clockwise.
Image apply_orientation(Image image, int orientation);

}  // namespace s1::vision
