#include "server/body_encoding.h"

#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <array>
#include <memory>

namespace s1::server {
namespace {

// Output is produced in pieces of this size, so a body's memory grows with what it decodes to, and
// never past the limit by more than one piece.
constexpr size_t piece_bytes = 64 * 1024;

api::ApiError too_large() {
  return api::ApiError::make(api::ErrorCode::payload_too_large, "Request body too large once decoded");
}

api::ApiError undecodable(std::string_view coding) {
  return api::ApiError::make(api::ErrorCode::invalid_body_encoding,
                             "The request body is not valid " + std::string(coding) + " data");
}

// RFC 9110's "deflate" is the zlib format (RFC 1950), but some clients send a raw deflate stream: a
// zlib stream starts with a header whose check bits make it a multiple of 31.
bool zlib_header(std::string_view data) {
  if (data.size() < 2) return false;
  const auto first = static_cast<unsigned char>(data[0]);
  const auto second = static_cast<unsigned char>(data[1]);
  return (first & 0x0F) == Z_DEFLATED && (first * 256U + second) % 31 == 0;
}

api::Result<std::string> inflate_body(ContentCoding coding, std::string_view encoded, size_t limit) {
  const std::string_view name = coding == ContentCoding::gzip ? "gzip" : "deflate";
  const int window_bits = coding == ContentCoding::gzip ? 16 + MAX_WBITS
                          : zlib_header(encoded)        ? MAX_WBITS
                                                        : -MAX_WBITS;
  z_stream stream{};
  if (inflateInit2(&stream, window_bits) != Z_OK) return api::ApiError::make(api::ErrorCode::internal_error, "zlib");
  const std::unique_ptr<z_stream, int (*)(z_stream*)> owner(&stream, &inflateEnd);
  std::string decoded;
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(encoded.data()));
  stream.avail_in = static_cast<uInt>(encoded.size());
  if (encoded.empty()) return undecodable(name);
  while (true) {
    const size_t used = decoded.size();
    decoded.resize(used + piece_bytes);
    stream.next_out = reinterpret_cast<Bytef*>(decoded.data() + used);
    stream.avail_out = static_cast<uInt>(piece_bytes);
    const int status = inflate(&stream, Z_NO_FLUSH);
    decoded.resize(used + piece_bytes - stream.avail_out);
    if (decoded.size() > limit) return too_large();
    if (status == Z_STREAM_END) {
      if (stream.avail_in == 0) return decoded;
      // Another gzip member may follow; deflate has one stream only.
      if (coding != ContentCoding::gzip || inflateReset(&stream) != Z_OK) return undecodable(name);
      continue;
    }
    if (status == Z_BUF_ERROR && stream.avail_in == 0) return undecodable(name);  // cut short
    if (status != Z_OK && status != Z_BUF_ERROR) return undecodable(name);
  }
}

api::Result<std::string> unzstd_body(std::string_view encoded, size_t limit) {
  const std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> context(ZSTD_createDCtx(), &ZSTD_freeDCtx);
  if (!context) return api::ApiError::make(api::ErrorCode::internal_error, "zstd");
  // A frame may ask for a window of up to 2 GiB, allocated before any output: allow what a body
  // within the limit could need, at least 8 MiB (what zstd's levels use for streamed frames) and at
  // most zstd's own default bound, 128 MiB.
  constexpr int default_window_log_max = 27;
  int window_log = 23;
  while (window_log < default_window_log_max && (size_t{1} << window_log) < limit) ++window_log;
  ZSTD_DCtx_setParameter(context.get(), ZSTD_d_windowLogMax, window_log);
  std::string decoded;
  ZSTD_inBuffer input{encoded.data(), encoded.size(), 0};
  if (encoded.empty()) return undecodable("zstd");
  size_t pending = 1;  // 0 once a frame is whole
  while (input.pos < input.size || pending != 0) {
    const size_t used = decoded.size();
    decoded.resize(used + piece_bytes);
    ZSTD_outBuffer output{decoded.data() + used, piece_bytes, 0};
    const size_t before = input.pos;
    pending = ZSTD_decompressStream(context.get(), &output, &input);
    decoded.resize(used + output.pos);
    if (ZSTD_isError(pending)) return undecodable("zstd");
    if (decoded.size() > limit) return too_large();
    // All input taken, the frame unfinished and no room was the reason: it was cut short.
    if (pending != 0 && input.pos == input.size && before == input.pos && output.pos < piece_bytes) {
      return undecodable("zstd");
    }
  }
  return decoded;
}

}  // namespace

api::Result<std::string> decode_body(ContentCoding coding, std::string_view encoded, size_t limit) {
  switch (coding) {
    case ContentCoding::identity:
      break;
    case ContentCoding::gzip:
    case ContentCoding::deflate:
      return inflate_body(coding, encoded, limit);
    case ContentCoding::zstd:
      return unzstd_body(encoded, limit);
  }
  return std::string(encoded);
}

}  // namespace s1::server
