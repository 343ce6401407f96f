// Media from the network: the image decoders (libpng, libjpeg-turbo, libwebp behind our readers:
// header checks, EXIF orientation) and the intake of every form in a JSON body must never crash,
// hang or read out of bounds. A body starting with '{' is a request; anything else an image file.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "api/media.h"
#include "api/openai_decisions.h"
#include "api/request.h"
#include "vision/decode.h"

namespace {

// Small enough that a decoded image stays far below the fuzzer's memory limit.
constexpr s1::api::MediaLimits fuzz_limits{8, 1 << 20, 1 << 20};

void decode_all(const s1::api::DecisionRequest& request) {
  auto attached = s1::api::attach_uploads(request.media, {});
  if (attached) (void)s1::api::decode_request_images(attached.value(), fuzz_limits);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (!bytes.starts_with('{')) {
    (void)s1::vision::decode_image(bytes, fuzz_limits.max_image_pixels);
    return 0;
  }
  const s1::api::RequestLimits limits{64, true};
  if (auto request = s1::api::parse_system_one_request(bytes, limits)) decode_all(request.value());
  if (auto decisions = s1::api::parse_decisions_request(bytes, limits)) decode_all(decisions->pipeline);
  return 0;
}
