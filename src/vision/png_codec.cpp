// PNG through libpng's classic API rather than its simplified one: the simplified API composites
// alpha onto a background and gamma-corrects 16-bit samples, where the reference's PIL
// `convert("RGB")` drops alpha and keeps the high byte.

#include <png.h>

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>

#include "vision/codecs.h"

namespace s1::vision::codec {
namespace {

// Bounds what one ancillary chunk (text, ICC profile) may allocate, decompressed.
constexpr png_alloc_size_t max_chunk_bytes = 4 * 1024 * 1024;

struct PngSource {
  std::string_view bytes;
  size_t offset = 0;
  char message[160] = {};
};

void read_from_memory(png_structp png, png_bytep out, png_size_t length) {
  auto* source = static_cast<PngSource*>(png_get_io_ptr(png));
  if (source->bytes.size() - source->offset < length) png_error(png, "the data ends early");
  std::memcpy(out, source->bytes.data() + source->offset, length);
  source->offset += length;
}

void on_error(png_structp png, png_const_charp message) {
  auto* source = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(source->message, sizeof source->message, "%s", message);
  png_longjmp(png, 1);
}

void on_warning(png_structp /*png*/, png_const_charp /*message*/) {}

// Owns libpng's reader; the functions that call setjmp hold nothing else with a destructor.
class PngReader {
 public:
  explicit PngReader(std::string_view bytes) {
    source_.bytes = bytes;
    png_ = png_create_read_struct(PNG_LIBPNG_VER_STRING, &source_, on_error, on_warning);
    if (png_ != nullptr) info_ = png_create_info_struct(png_);
  }
  PngReader(const PngReader&) = delete;
  PngReader& operator=(const PngReader&) = delete;
  ~PngReader() { png_destroy_read_struct(&png_, &info_, nullptr); }

  bool usable() const { return png_ != nullptr && info_ != nullptr; }
  png_structp png() const { return png_; }
  png_infop info() const { return info_; }
  DecodeFailure failure() const {
    return DecodeFailure{source_.message[0] != '\0' ? "its PNG data is invalid (" + std::string(source_.message) + ")"
                                                    : "its PNG data is invalid"};
  }
  PngSource& source() { return source_; }

 private:
  PngSource source_;
  png_structp png_ = nullptr;
  png_infop info_ = nullptr;
};

bool read_info(PngReader& reader) {
  png_structp png = reader.png();
  png_infop info = reader.info();
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_read_fn(png, &reader.source(), read_from_memory);
  // The caller checks the pixel count itself; libpng's own defaults would refuse earlier.
  png_set_user_limits(png, PNG_UINT_31_MAX, PNG_UINT_31_MAX);
  png_set_chunk_malloc_max(png, max_chunk_bytes);
  png_read_info(png, info);
  return true;
}

// Transforms every mode but 16-bit grayscale to 8-bit RGB the way PIL converts it: palette looked
// up, low-bit gray scaled to 0–255, 16-bit samples cut to their high byte, alpha dropped.
bool set_transforms(PngReader& reader, bool keep_16_bit_gray) {
  png_structp png = reader.png();
  png_infop info = reader.info();
  if (setjmp(png_jmpbuf(png))) return false;
  const int color_type = png_get_color_type(png, info);
  const int bit_depth = png_get_bit_depth(png, info);
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if ((color_type & PNG_COLOR_MASK_COLOR) == 0 && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (bit_depth == 16 && !keep_16_bit_gray) png_set_strip_16(png);
  png_set_strip_alpha(png);
  if ((color_type & PNG_COLOR_MASK_COLOR) == 0 && !keep_16_bit_gray) png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  return true;
}

bool read_rows(PngReader& reader, png_bytepp rows) {
  png_structp png = reader.png();
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_image(png, rows);
  // An eXIf chunk may follow the image data.
  png_read_end(png, reader.info());
  return true;
}

std::string exif_block(const PngReader& reader) {
  png_bytep exif = nullptr;
  png_uint_32 length = 0;
  if (png_get_eXIf_1(reader.png(), reader.info(), &length, &exif) == 0 || exif == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(exif), length);
}

}  // namespace

std::variant<ImageHeader, DecodeFailure> png_header(std::string_view bytes) {
  PngReader reader(bytes);
  if (!reader.usable()) return DecodeFailure{"the PNG decoder could not start"};
  if (!read_info(reader)) return reader.failure();
  return ImageHeader{ImageFormat::png, static_cast<int>(png_get_image_width(reader.png(), reader.info())),
                     static_cast<int>(png_get_image_height(reader.png(), reader.info()))};
}

std::variant<Decoded, DecodeFailure> png_decode(std::string_view bytes) {
  PngReader reader(bytes);
  if (!reader.usable()) return DecodeFailure{"the PNG decoder could not start"};
  if (!read_info(reader)) return reader.failure();
  // PIL opens 16-bit grayscale as mode I;16, whose RGB conversion clips each sample at 255
  // rather than scaling it.
  const bool gray_16 = png_get_color_type(reader.png(), reader.info()) == PNG_COLOR_TYPE_GRAY &&
                       png_get_bit_depth(reader.png(), reader.info()) == 16;
  if (!set_transforms(reader, gray_16)) return reader.failure();
  const size_t width = png_get_image_width(reader.png(), reader.info());
  const size_t height = png_get_image_height(reader.png(), reader.info());
  const size_t row_bytes = png_get_rowbytes(reader.png(), reader.info());
  if (row_bytes != width * (gray_16 ? 2 : 3)) return DecodeFailure{"its PNG pixel layout is not supported"};

  std::vector<uint8_t> pixels(row_bytes * height);
  std::vector<png_bytep> rows(height);
  for (size_t y = 0; y < height; ++y) rows[y] = pixels.data() + y * row_bytes;
  if (!read_rows(reader, rows.data())) return reader.failure();

  Decoded decoded;
  decoded.image.width = static_cast<int>(width);
  decoded.image.height = static_cast<int>(height);
  if (gray_16) {
    decoded.image.rgb.resize(width * height * 3);
    for (size_t i = 0; i < width * height; ++i) {
      const unsigned sample = (unsigned{pixels[2 * i]} << 8) | pixels[2 * i + 1];
      const auto clipped = static_cast<uint8_t>(std::min(sample, 255u));
      std::fill_n(decoded.image.rgb.begin() + static_cast<std::ptrdiff_t>(3 * i), 3, clipped);
    }
  } else {
    decoded.image.rgb = std::move(pixels);
  }
  decoded.exif = exif_block(reader);
  return decoded;
}

}  // namespace s1::vision::codec
