// JPEG through libjpeg-turbo with the settings PIL decodes with (accurate integer DCT, fancy
// upsampling), so the reference's pixels come out; CMYK and YCCK come out as CMYK and are converted
// as PIL converts them, taking the data to be Adobe-inverted as PIL always does.

#include <csetjmp>

#include "vision/codecs.h"

// jpeglib.h uses size_t and FILE without including their headers.
// clang-format off
#include <cstddef>
#include <cstdio>
#include <jerror.h>
#include <jpeglib.h>
// clang-format on

namespace s1::vision::codec {
namespace {

// A progressive file can repeat scans without end, each a full pass over the coefficients;
// libjpeg-turbo's own tools stop at a limit like this one. Real encoders write about ten.
constexpr int max_scans = 256;

struct JpegErrors {
  jpeg_error_mgr manager;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX] = {};
  bool truncated = false;
};

void on_error(j_common_ptr info) {
  auto* errors = reinterpret_cast<JpegErrors*>(info->err);
  (*info->err->format_message)(info, errors->message);
  std::longjmp(errors->jump, 1);
}

// PIL refuses a file whose data ends early (libjpeg fills the rest with gray and warns); other
// warnings, such as stray bytes between markers, it decodes through.
void on_message(j_common_ptr info, int level) {
  auto* errors = reinterpret_cast<JpegErrors*>(info->err);
  if (level < 0 && info->err->msg_code == JWRN_JPEG_EOF) errors->truncated = true;
}

void on_progress(j_common_ptr info) {
  auto* decompress = reinterpret_cast<j_decompress_ptr>(info);
  if (decompress->input_scan_number > max_scans) {
    auto* errors = reinterpret_cast<JpegErrors*>(info->err);
    std::snprintf(errors->message, sizeof errors->message, "more than %d scans", max_scans);
    std::longjmp(errors->jump, 1);
  }
}

// Owns the decompressor; the functions that call setjmp hold nothing else with a destructor.
class JpegReader {
 public:
  explicit JpegReader(std::string_view bytes) {
    info_.err = jpeg_std_error(&errors_.manager);
    errors_.manager.error_exit = on_error;
    errors_.manager.emit_message = on_message;
    progress_.progress_monitor = on_progress;
    jpeg_create_decompress(&info_);
    info_.progress = &progress_;
    jpeg_mem_src(&info_, reinterpret_cast<const unsigned char*>(bytes.data()),
                 static_cast<unsigned long>(bytes.size()));
  }
  JpegReader(const JpegReader&) = delete;
  JpegReader& operator=(const JpegReader&) = delete;
  ~JpegReader() { jpeg_destroy_decompress(&info_); }

  jpeg_decompress_struct& info() { return info_; }
  JpegErrors& errors() { return errors_; }
  DecodeFailure failure() const {
    if (errors_.truncated) return DecodeFailure{"its JPEG data is truncated"};
    return DecodeFailure{"its JPEG data is invalid (" + std::string(errors_.message) + ")"};
  }

 private:
  JpegErrors errors_;
  jpeg_progress_mgr progress_{};
  jpeg_decompress_struct info_{};
};

bool read_header(JpegReader& reader) {
  jpeg_decompress_struct& info = reader.info();
  if (setjmp(reader.errors().jump)) return false;
  jpeg_save_markers(&info, JPEG_APP0 + 1, 0xFFFF);
  jpeg_read_header(&info, TRUE);
  return true;
}

bool start(JpegReader& reader, bool cmyk) {
  jpeg_decompress_struct& info = reader.info();
  if (setjmp(reader.errors().jump)) return false;
  info.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  info.dct_method = JDCT_ISLOW;
  info.do_fancy_upsampling = TRUE;
  jpeg_start_decompress(&info);
  return true;
}

bool read_rows(JpegReader& reader, unsigned char* pixels, size_t row_bytes) {
  jpeg_decompress_struct& info = reader.info();
  if (setjmp(reader.errors().jump)) return false;
  while (info.output_scanline < info.output_height) {
    JSAMPROW row = pixels + size_t{info.output_scanline} * row_bytes;
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  return !reader.errors().truncated;
}

// As PIL reads EXIF: the first APP1 "Exif" segment, later ones appended without their prefix.
std::string exif_block(jpeg_decompress_struct& info) {
  constexpr std::string_view prefix{"Exif\0\0", 6};
  std::string exif;
  for (jpeg_saved_marker_ptr marker = info.marker_list; marker != nullptr; marker = marker->next) {
    const std::string_view data(reinterpret_cast<const char*>(marker->data), marker->data_length);
    if (marker->marker != JPEG_APP0 + 1 || !data.starts_with(prefix)) continue;
    if (exif.empty()) {
      exif = data;
    } else {
      exif += data.substr(prefix.size());
    }
  }
  return exif;
}

// PIL's CMYK → RGB: each channel (255 - k) scaled by (255 - c), on the inverted samples.
uint8_t cmyk_channel(uint8_t stored_c, uint8_t stored_k) {
  const int c = 255 - stored_c;
  const int not_k = stored_k;  // 255 - (255 - stored_k)
  const int product = c * not_k + 128;
  const int scaled = ((product >> 8) + product) >> 8;
  return static_cast<uint8_t>(not_k - scaled);
}

}  // namespace

std::variant<ImageHeader, DecodeFailure> jpeg_header(std::string_view bytes) {
  JpegReader reader(bytes);
  if (!read_header(reader)) return reader.failure();
  return ImageHeader{ImageFormat::jpeg, static_cast<int>(reader.info().image_width),
                     static_cast<int>(reader.info().image_height)};
}

std::variant<Decoded, DecodeFailure> jpeg_decode(std::string_view bytes) {
  JpegReader reader(bytes);
  if (!read_header(reader)) return reader.failure();
  // Saved markers live in the image's memory pool, which jpeg_finish_decompress frees.
  std::string exif = exif_block(reader.info());
  const J_COLOR_SPACE stored = reader.info().jpeg_color_space;
  const bool cmyk = stored == JCS_CMYK || stored == JCS_YCCK;
  if (!start(reader, cmyk)) return reader.failure();
  const size_t width = reader.info().output_width;
  const size_t height = reader.info().output_height;
  const size_t channels = cmyk ? 4 : 3;
  if (static_cast<size_t>(reader.info().output_components) != channels) {
    return DecodeFailure{"its JPEG colour layout is not supported"};
  }
  std::vector<uint8_t> pixels(width * height * channels);
  if (!read_rows(reader, pixels.data(), width * channels)) return reader.failure();

  Decoded decoded;
  decoded.image.width = static_cast<int>(width);
  decoded.image.height = static_cast<int>(height);
  if (cmyk) {
    decoded.image.rgb.resize(width * height * 3);
    for (size_t i = 0; i < width * height; ++i) {
      const uint8_t* sample = &pixels[4 * i];
      for (size_t channel = 0; channel < 3; ++channel) {
        decoded.image.rgb[3 * i + channel] = cmyk_channel(sample[channel], sample[3]);
      }
    }
  } else {
    decoded.image.rgb = std::move(pixels);
  }
  decoded.exif = std::move(exif);
  return decoded;
}

}  // namespace s1::vision::codec
