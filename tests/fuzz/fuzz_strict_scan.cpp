// The router's strict-JSON scan (its fast path included) against the DOM parser: for every body
// the same verdict, the same message and the same top-level "model"; any difference traps.
#include "api/json.h"

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <variant>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto dom = s1::api::parse_strict_json(text);
  const auto scan = s1::api::scan_strict_json(text, "model");
  if (dom.index() != scan.index()) __builtin_trap();
  if (const auto* error = std::get_if<s1::api::JsonSyntaxError>(&dom)) {
    if (error->message != std::get<s1::api::JsonSyntaxError>(scan).message) __builtin_trap();
    return 0;
  }
  const s1::api::Json& root = std::get<s1::api::Json>(dom);
  const s1::api::StrictJsonScan& scanned = std::get<s1::api::StrictJsonScan>(scan);
  const s1::api::TopLevelMember expected = s1::api::top_level_member(root, "model");
  if (scanned.object != root.is_object() || scanned.member.kind != expected.kind || scanned.member.text != expected.text) {
    __builtin_trap();
  }
  return 0;
}
