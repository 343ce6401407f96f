// Bodies of POST /v1/systemone/batch from the network: the batch parser and every item's validation
// must never crash, hang or read out of bounds, and must keep every item, in order, when it accepts.
#include "server/batch_request.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const s1::api::RequestLimits limits{64, true};
  auto parsed = s1::server::parse_batch_request(body, limits);
  if (parsed) {
    const auto& items = parsed.value();
    if (items.empty() || items.size() > s1::server::max_batch_items) std::abort();
  } else if (parsed.error().code != s1::api::ErrorCode::validation) {
    std::abort();  // a body that is not a batch is a 422, never another status
  }
  return 0;
}
