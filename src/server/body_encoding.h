#pragma once
// Request bodies sent with a Content-Encoding (§11.1): the official SDK compresses every body of
// 1 KiB or more with zstd. Decoding is bounded by the body limit, so a small compressed body that
// expands without end (a decompression bomb) costs at most the limit in memory.

#include <cstddef>
#include <string>
#include <string_view>

#include "api/errors.h"
#include "server/http_checks.h"

namespace s1::server {

// The decoded body: payload_too_large as soon as it would pass `limit` bytes, invalid_body_encoding
// for data that is not whole streams of the coding (gzip members and zstd frames may follow each
// other, as their formats allow).
api::Result<std::string> decode_body(ContentCoding coding, std::string_view encoded, size_t limit);

}  // namespace s1::server
