#include "router/upstream_url.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace s1::router {
namespace {

bool is_control(unsigned char c) { return c < 0x20 || c == 0x7f; }

}  // namespace

std::string shown_url(std::string_view url) {
  const size_t scheme_end = url.find("://");
  const size_t authority_start = scheme_end == std::string_view::npos ? 0 : scheme_end + 3;
  const size_t authority_end = std::min(url.find_first_of("/?#", authority_start), url.size());
  const size_t at = url.substr(0, authority_end).rfind('@');
  std::string shown(url.substr(0, authority_start));
  if (at != std::string_view::npos && at >= authority_start) {
    shown.append("***").append(url.substr(at, authority_end - at));
  } else {
    shown.append(url.substr(authority_start, authority_end - authority_start));
  }
  const size_t query = std::min(url.find_first_of("?#", authority_end), url.size());
  shown.append(url.substr(authority_end, query - authority_end));
  if (query < url.size()) shown.append(1, url[query]).append("***");
  // A control byte (a NUL would cut the message short) is shown as '_', which no URL rule reads.
  std::replace_if(shown.begin(), shown.end(), is_control, '_');
  return shown;
}

ParsedUrl parse_upstream_url(const std::string& url) {
  constexpr std::string_view scheme = "http://";
  const std::string named = "upstream URL '" + shown_url(url) + "'";
  if (!url.starts_with(scheme)) throw std::invalid_argument(named + " must start with http://");
  if (std::any_of(url.begin(), url.end(), [](unsigned char c) { return c == ' ' || is_control(c); })) {
    throw std::invalid_argument(named + " has a space or a control character");
  }
  std::string_view rest = std::string_view(url).substr(scheme.size());
  if (rest.find_first_of("?#") != std::string_view::npos) {
    throw std::invalid_argument(named +
                                " has a query string or fragment: put credentials in the pool's credential_env or "
                                "credential_file, never in a URL");
  }
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (authority.find('@') != std::string_view::npos) {
    throw std::invalid_argument(named +
                                " has user-info: put credentials in the pool's credential_env or credential_file, "
                                "never in a URL");
  }
  ParsedUrl parsed;
  parsed.base_path = slash == std::string_view::npos ? "" : std::string(rest.substr(slash));
  while (!parsed.base_path.empty() && parsed.base_path.back() == '/') parsed.base_path.pop_back();
  if (authority.empty()) throw std::invalid_argument(named + " has no host");
  if (authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) throw std::invalid_argument(named + " has a bad IPv6 host");
    parsed.host = std::string(authority.substr(1, close - 1));
    authority.remove_prefix(close + 1);
    parsed.port = authority.starts_with(":") ? std::string(authority.substr(1)) : "80";
  } else {
    const size_t colon = authority.rfind(':');
    parsed.host = std::string(authority.substr(0, colon));
    parsed.port = colon == std::string_view::npos ? "80" : std::string(authority.substr(colon + 1));
  }
  if (parsed.host.empty() || parsed.port.empty() ||
      !std::all_of(parsed.port.begin(), parsed.port.end(), [](unsigned char c) { return std::isdigit(c); })) {
    throw std::invalid_argument(named + " must be http://host[:port][/path]");
  }
  return parsed;
}

}  // namespace s1::router
