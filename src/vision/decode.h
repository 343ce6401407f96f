#pragma once
// Encoded stills (PNG, JPEG, WebP) → Image, with Debian's libraries (libpng, libjpeg-turbo,
// libwebp). The size is read from the file's header and checked before any pixel is decoded, so a
// small file claiming a huge canvas costs microseconds.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "vision/image.h"

namespace s1::vision {

enum class ImageFormat { png, jpeg, webp };

std::string_view image_format_name(ImageFormat format);

// The format the file's signature (magic bytes) says; nullopt for anything else.
std::optional<ImageFormat> sniff_image_format(std::string_view bytes);

struct ImageHeader {
  ImageFormat format = ImageFormat::png;
  int width = 0;
  int height = 0;  // as stored, before the EXIF orientation turns it
};

// Why a file cannot be decoded, for a human: "its PNG data is truncated", never the bytes themselves.
struct DecodeFailure {
  std::string reason;
};

std::variant<ImageHeader, DecodeFailure> read_image_header(std::string_view bytes);

// The whole file decoded and turned by its EXIF orientation; refused before decoding when the header
// says more than `max_pixels` pixels.
std::variant<Image, DecodeFailure> decode_image(std::string_view bytes, uint64_t max_pixels);

}  // namespace s1::vision
