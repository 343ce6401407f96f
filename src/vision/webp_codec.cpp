// WebP through libwebp's animation decoder, as PIL reads every WebP file: a still is its one frame
// drawn on a transparent canvas, so a fully transparent pixel comes out black, as in the reference.
// An animation gives its first frame, as PIL's and the reference's loaders do.

#include <webp/decode.h>
#include <webp/demux.h>

#include <memory>

#include "vision/codecs.h"

namespace s1::vision::codec {
namespace {

WebPData webp_data(std::string_view bytes) {
  return WebPData{reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()};
}

struct DemuxDeleter {
  void operator()(WebPDemuxer* demuxer) const { WebPDemuxDelete(demuxer); }
};
struct AnimDecoderDeleter {
  void operator()(WebPAnimDecoder* decoder) const { WebPAnimDecoderDelete(decoder); }
};

std::string exif_block(std::string_view bytes) {
  const WebPData data = webp_data(bytes);
  std::unique_ptr<WebPDemuxer, DemuxDeleter> demuxer(WebPDemux(&data));
  if (!demuxer) return {};
  WebPChunkIterator chunk;
  std::string exif;
  if (WebPDemuxGetChunk(demuxer.get(), "EXIF", 1, &chunk)) {
    exif.assign(reinterpret_cast<const char*>(chunk.chunk.bytes), chunk.chunk.size);
    WebPDemuxReleaseChunkIterator(&chunk);
  }
  return exif;
}

}  // namespace

std::variant<ImageHeader, DecodeFailure> webp_header(std::string_view bytes) {
  WebPBitstreamFeatures features;
  if (WebPGetFeatures(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &features) != VP8_STATUS_OK) {
    return DecodeFailure{"its WebP header is invalid"};
  }
  return ImageHeader{ImageFormat::webp, features.width, features.height};
}

std::variant<Decoded, DecodeFailure> webp_decode(std::string_view bytes) {
  const WebPData data = webp_data(bytes);
  WebPAnimDecoderOptions options;
  if (!WebPAnimDecoderOptionsInit(&options)) return DecodeFailure{"the WebP decoder could not start"};
  options.color_mode = MODE_RGBA;
  options.use_threads = 0;
  std::unique_ptr<WebPAnimDecoder, AnimDecoderDeleter> decoder(WebPAnimDecoderNew(&data, &options));
  if (!decoder) return DecodeFailure{"its WebP data is invalid"};
  WebPAnimInfo info;
  if (!WebPAnimDecoderGetInfo(decoder.get(), &info)) return DecodeFailure{"its WebP data is invalid"};
  uint8_t* frame = nullptr;
  int timestamp = 0;
  if (!WebPAnimDecoderGetNext(decoder.get(), &frame, &timestamp) || frame == nullptr) {
    return DecodeFailure{"its WebP image data is invalid or truncated"};
  }
  Decoded decoded;
  decoded.image.width = static_cast<int>(info.canvas_width);
  decoded.image.height = static_cast<int>(info.canvas_height);
  const size_t pixels = size_t{info.canvas_width} * info.canvas_height;
  decoded.image.rgb.resize(pixels * 3);
  for (size_t i = 0; i < pixels; ++i) {
    decoded.image.rgb[3 * i] = frame[4 * i];
    decoded.image.rgb[3 * i + 1] = frame[4 * i + 1];
    decoded.image.rgb[3 * i + 2] = frame[4 * i + 2];
  }
  decoded.exif = exif_block(bytes);
  return decoded;
}

}  // namespace s1::vision::codec
