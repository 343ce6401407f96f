// The request-body intake the server runs before JSON (§11.1): a Content-Type's multipart boundary,
// Content-Encoding decoding under a limit, and multipart/form-data splitting. Input: the Content-Type
// line, a newline, one byte choosing the coding, then the body. Traps when a decoded body passes the
// limit or a part is not a view into the body it came from.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/body_encoding.h"
#include "server/multipart.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  if (newline == std::string_view::npos || newline + 1 >= input.size()) return 0;
  const std::string_view content_type = input.substr(0, newline);
  const auto coding = static_cast<s1::server::ContentCoding>(static_cast<unsigned char>(input[newline + 1]) % 4);
  std::string_view body = input.substr(newline + 2);
  constexpr size_t limit = 1 << 20;
  const auto decoded = s1::server::decode_body(coding, body, limit);
  if (coding != s1::server::ContentCoding::identity) {
    if (!decoded) return 0;
    if (decoded.value().size() > limit) __builtin_trap();
    body = decoded.value();
  }
  const auto boundary = s1::server::form_data_boundary(content_type);
  if (!boundary) return 0;
  const auto parts = s1::server::parse_form_data(body, *boundary);
  if (!parts) return 0;
  for (const s1::server::FormPart& part : parts.value()) {
    if (part.content.data() < body.data() || part.content.data() + part.content.size() > body.data() + body.size() ||
        part.name.empty()) {
      __builtin_trap();
    }
  }
  return 0;
}
