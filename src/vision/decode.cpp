#include "vision/decode.h"

#include "vision/codecs.h"
#include "vision/exif_orientation.h"

namespace s1::vision {

std::string_view image_format_name(ImageFormat format) {
  switch (format) {
    case ImageFormat::png:
      return "png";
    case ImageFormat::jpeg:
      return "jpeg";
    case ImageFormat::webp:
      return "webp";
  }
  return "png";
}

std::optional<ImageFormat> sniff_image_format(std::string_view bytes) {
  if (bytes.starts_with("\x89PNG\r\n\x1a\n")) return ImageFormat::png;
  if (bytes.starts_with("\xff\xd8\xff")) return ImageFormat::jpeg;
  if (bytes.size() >= 12 && bytes.starts_with("RIFF") && bytes.substr(8, 4) == "WEBP") return ImageFormat::webp;
  return std::nullopt;
}

std::variant<ImageHeader, DecodeFailure> read_image_header(std::string_view bytes) {
  const std::optional<ImageFormat> format = sniff_image_format(bytes);
  if (!format) return DecodeFailure{"it is not a PNG, JPEG or WebP file"};
  switch (*format) {
    case ImageFormat::png:
      return codec::png_header(bytes);
    case ImageFormat::jpeg:
      return codec::jpeg_header(bytes);
    case ImageFormat::webp:
      return codec::webp_header(bytes);
  }
  return DecodeFailure{"it is not a PNG, JPEG or WebP file"};
}

std::variant<Image, DecodeFailure> decode_image(std::string_view bytes, uint64_t max_pixels) {
  auto header = read_image_header(bytes);
  if (auto* failure = std::get_if<DecodeFailure>(&header)) return std::move(*failure);
  const ImageHeader& size = std::get<ImageHeader>(header);
  if (size.width <= 0 || size.height <= 0) return DecodeFailure{"it has no pixels"};
  const uint64_t pixels = static_cast<uint64_t>(size.width) * static_cast<uint64_t>(size.height);
  if (pixels > max_pixels) {
    return DecodeFailure{"it is " + std::to_string(size.width) + "x" + std::to_string(size.height) +
                         " pixels, over the limit of " + std::to_string(max_pixels) + " pixels per image"};
  }
  std::variant<codec::Decoded, DecodeFailure> decoded = DecodeFailure{};
  switch (size.format) {
    case ImageFormat::png:
      decoded = codec::png_decode(bytes);
      break;
    case ImageFormat::jpeg:
      decoded = codec::jpeg_decode(bytes);
      break;
    case ImageFormat::webp:
      decoded = codec::webp_decode(bytes);
      break;
  }
  if (auto* failure = std::get_if<DecodeFailure>(&decoded)) return std::move(*failure);
  codec::Decoded& image = std::get<codec::Decoded>(decoded);
  return apply_orientation(std::move(image.image), exif_orientation(image.exif));
}

}  // namespace s1::vision
