// Upstream URLs (router, contract §11.7): parse_upstream_url accepts only http://host[:port][/path]
// and throws nothing but std::invalid_argument naming the URL as shown_url shows it; shown_url
// keeps no user-info, nothing of a query or fragment but its first character, and no control byte.
#include "router/upstream_url.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace {

// Where a URL's authority begins and ends: after "://" (or at 0), up to the first '/', '?' or '#'.
std::pair<size_t, size_t> authority_of(std::string_view url) {
  const size_t scheme_end = url.find("://");
  const size_t start = scheme_end == std::string_view::npos ? 0 : scheme_end + 3;
  return {start, std::min(url.find_first_of("/?#", start), url.size())};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string url(reinterpret_cast<const char*>(data), size);
  const std::string shown = s1::router::shown_url(url);
  const auto [start, end] = authority_of(url);
  const bool user_info = url.substr(start, end - start).find('@') != std::string::npos;
  const bool query = url.find_first_of("?#", end) != std::string::npos;
  const bool control = std::any_of(url.begin(), url.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; });
  if (!user_info && !query && !control && shown != url) __builtin_trap();
  if (std::any_of(shown.begin(), shown.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; })) __builtin_trap();
  if (shown.size() > url.size() + 6) __builtin_trap();
  const auto [shown_start, shown_end] = authority_of(shown);
  const std::string_view shown_authority = std::string_view(shown).substr(shown_start, shown_end - shown_start);
  const size_t shown_at = shown_authority.rfind('@');
  if (user_info != (shown_at != std::string_view::npos)) __builtin_trap();
  if (user_info && (shown_at != 3 || !shown_authority.starts_with("***@"))) __builtin_trap();
  const size_t shown_query = shown.find_first_of("?#", shown_end);
  if (query != (shown_query != std::string::npos)) __builtin_trap();
  if (query && (shown_query + 4 != shown.size() || !shown.ends_with("***"))) __builtin_trap();

  try {
    const s1::router::ParsedUrl parsed = s1::router::parse_upstream_url(url);
    if (!url.starts_with("http://") || user_info || control || url.find_first_of("?# ") != std::string::npos) {
      __builtin_trap();
    }
    if (parsed.host.empty() || parsed.port.empty()) __builtin_trap();
    if (!std::all_of(parsed.port.begin(), parsed.port.end(), [](unsigned char c) { return std::isdigit(c); })) {
      __builtin_trap();
    }
  } catch (const std::invalid_argument& error) {
    if (std::string_view(error.what()).find("'" + shown + "'") == std::string_view::npos) __builtin_trap();
  }
  return 0;
}
