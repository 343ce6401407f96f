#pragma once
// The per-format halves of decode.cpp: each reads its header and decodes with its library, leaving
// orientation to the caller (the raw EXIF block, when the file carries one, comes back with it).

#include <string>

#include "vision/decode.h"

namespace s1::vision::codec {

struct Decoded {
  Image image;
  std::string exif;  // the file's EXIF block (a TIFF structure, maybe after "Exif\0\0"), or empty
};

std::variant<ImageHeader, DecodeFailure> png_header(std::string_view bytes);
std::variant<Decoded, DecodeFailure> png_decode(std::string_view bytes);

std::variant<ImageHeader, DecodeFailure> jpeg_header(std::string_view bytes);
std::variant<Decoded, DecodeFailure> jpeg_decode(std::string_view bytes);

std::variant<ImageHeader, DecodeFailure> webp_header(std::string_view bytes);
std::variant<Decoded, DecodeFailure> webp_decode(std::string_view bytes);

}  // namespace s1::vision::codec
