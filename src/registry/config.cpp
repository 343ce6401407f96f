#include "registry/config.h"

#include "router/upstream_url.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace s1::registry {
namespace {

using Json = nlohmann::ordered_json;

std::string describe(const std::filesystem::path& path, const std::string& entry) {
  return "config " + path.string() + ": " + entry;
}

template <typename T>
T read_number(const Json& value, const std::filesystem::path& path, const std::string& entry, T minimum, T maximum) {
  if (!value.is_number_integer() && !value.is_number_unsigned()) {
    throw ConfigError(describe(path, entry + " must be an integer"));
  }
  const auto number = value.get<int64_t>();
  if (number < static_cast<int64_t>(minimum) || number > static_cast<int64_t>(maximum)) {
    throw ConfigError(describe(path, entry + " must be between " + std::to_string(minimum) + " and " +
                                         std::to_string(maximum)));
  }
  return static_cast<T>(number);
}

std::string read_string(const Json& value, const std::filesystem::path& path, const std::string& entry) {
  if (!value.is_string() || value.get_ref<const std::string&>().empty()) {
    throw ConfigError(describe(path, entry + " must be a non-empty string"));
  }
  return value.get<std::string>();
}

std::string read_name(const Json& value, const std::filesystem::path& path, const std::string& entry) {
  std::string name = read_string(value, path, entry);
  if (name.size() > 256) throw ConfigError(describe(path, entry + " must have at most 256 characters"));
  return name;
}

std::vector<std::string> read_names(const Json& value, const std::filesystem::path& path, const std::string& entry) {
  if (!value.is_array()) throw ConfigError(describe(path, entry + " must be an array of strings"));
  std::vector<std::string> names;
  for (const Json& name : value) names.push_back(read_name(name, path, entry + "[]"));
  return names;
}

std::string read_date(const Json& value, const std::filesystem::path& path, const std::string& entry) {
  if (!value.is_string() || !is_iso_date(value.get_ref<const std::string&>())) {
    throw ConfigError(describe(path, entry + " must be a date written YYYY-MM-DD"));
  }
  return value.get<std::string>();
}

UpstreamConfig read_upstream(const Json& entry, const std::filesystem::path& path, const std::string& where) {
  if (!entry.is_object()) throw ConfigError(describe(path, where + " must be an object"));
  UpstreamConfig upstream;
  for (const auto& [key, value] : entry.items()) {
    const std::string member = where + "." + key;
    if (key == "urls") {
      if (!value.is_array() || value.empty()) throw ConfigError(describe(path, member + " must be a non-empty array"));
      for (const Json& url : value) upstream.urls.push_back(read_string(url, path, member + "[]"));
    } else if (key == "model") {
      upstream.model = read_string(value, path, member);
    } else if (key == "credential_env") {
      upstream.credential_env = read_string(value, path, member);
    } else if (key == "credential_file") {
      upstream.credential_file = read_string(value, path, member);
    } else if (key == "connect_timeout_ms") {
      upstream.connect_timeout = std::chrono::milliseconds(read_number<int64_t>(value, path, member, 1, 600'000));
    } else if (key == "health_interval_ms") {
      upstream.health_interval = std::chrono::milliseconds(read_number<int64_t>(value, path, member, 10, 3'600'000));
    } else if (key == "health_timeout_ms") {
      upstream.health_timeout = std::chrono::milliseconds(read_number<int64_t>(value, path, member, 1, 600'000));
    } else if (key == "max_in_flight") {
      upstream.max_in_flight = read_number<size_t>(value, path, member, 1, 1'000'000);
    } else if (key == "response_cap_bytes") {
      upstream.response_cap = read_number<size_t>(value, path, member, 1, size_t{1} << 32);
    } else {
      throw ConfigError(describe(path, "unknown setting " + member));
    }
  }
  if (upstream.urls.empty()) throw ConfigError(describe(path, where + ".urls is required"));
  if (upstream.credential_env && upstream.credential_file) {
    throw ConfigError(describe(path, where + " sets both credential_env and credential_file"));
  }
  return upstream;
}

runtime::BatchLimits read_batch(const Json& entry, const std::filesystem::path& path, const std::string& where) {
  if (!entry.is_object()) throw ConfigError(describe(path, where + " must be an object"));
  runtime::BatchLimits batch;
  for (const auto& [key, value] : entry.items()) {
    const std::string member = where + "." + key;
    if (key == "max_requests") {
      batch.max_requests = read_number<size_t>(value, path, member, 1, 4096);
    } else if (key == "max_tokens") {
      batch.max_tokens = read_number<int64_t>(value, path, member, 1, int64_t{1} << 30);
    } else if (key == "max_wait_us") {
      batch.max_wait = std::chrono::microseconds(read_number<int64_t>(value, path, member, 0, 1'000'000));
    } else {
      throw ConfigError(describe(path, "unknown setting " + member));
    }
  }
  return batch;
}

ModelConfig read_model(const Json& entry, const std::filesystem::path& path, const std::string& where) {
  if (!entry.is_object()) throw ConfigError(describe(path, where + " must be an object"));
  ModelConfig model;
  bool has_source = false;
  for (const auto& [key, value] : entry.items()) {
    const std::string member = where + "." + key;
    if (key == "source") {
      model.source = read_string(value, path, member);
      has_source = true;
    } else if (key == "name") {
      model.name = read_name(value, path, member);
    } else if (key == "aliases") {
      model.aliases = read_names(value, path, member);
    } else if (key == "release_date") {
      model.release_date = read_date(value, path, member);
    } else if (key == "queue") {
      model.queue_capacity = read_number<size_t>(value, path, member, 1, 1'000'000);
    } else if (key == "batch") {
      model.batch = read_batch(value, path, member);
    } else if (key == "prefix_cache") {
      model.prefix_cache_bytes = read_number<size_t>(value, path, member, 0, size_t{1} << 40);
    } else if (key == "upstream") {
      model.upstream = read_upstream(value, path, member);
    } else {
      throw ConfigError(describe(path, "unknown setting " + member));
    }
  }
  if (model.upstream) {
    if (has_source) throw ConfigError(describe(path, where + " has both a source and an upstream"));
    if (!model.name) throw ConfigError(describe(path, where + ".name is required for an upstream model"));
  } else if (!has_source) {
    throw ConfigError(describe(path, where + ".source (or .upstream) is required"));
  }
  return model;
}

}  // namespace

bool is_iso_date(std::string_view text) {
  if (text.size() != 10 || text[4] != '-' || text[7] != '-') return false;
  auto field = [&](size_t start, size_t length) -> std::optional<unsigned> {
    unsigned value = 0;
    const char* end = text.data() + start + length;
    const auto [stop, error] = std::from_chars(text.data() + start, end, value);
    if (error != std::errc() || stop != end || !std::isdigit(static_cast<unsigned char>(text[start]))) {
      return std::nullopt;
    }
    return value;
  };
  const auto year = field(0, 4);
  const auto month = field(5, 2);
  const auto day = field(8, 2);
  if (!year || !month || !day) return false;
  return std::chrono::year_month_day(std::chrono::year(static_cast<int>(*year)), std::chrono::month(*month),
                                     std::chrono::day(*day))
      .ok();
}

ModelConfig parse_upstream_flag(const std::string& flag) {
  const size_t equals = flag.find('=');
  // A URL before any '=' means NAME= was left out, and the '=' is the URL's own (a query's).
  if (equals == std::string::npos || equals == 0 || equals + 1 == flag.size() || flag.find("://") < equals) {
    throw ConfigError("--upstream '" + router::shown_url(flag) + "' must be NAME=URL[,URL...]");
  }
  ModelConfig model;
  model.name = flag.substr(0, equals);
  UpstreamConfig upstream;
  std::string rest = flag.substr(equals + 1) + ",";
  size_t start = 0;
  for (size_t comma = rest.find(','); comma != std::string::npos; comma = rest.find(',', start)) {
    if (comma > start) upstream.urls.push_back(rest.substr(start, comma - start));
    start = comma + 1;
  }
  if (upstream.urls.empty()) throw ConfigError("--upstream '" + flag + "' names no URL");
  model.upstream = std::move(upstream);
  return model;
}

std::string read_upstream_credential(const UpstreamConfig& upstream, const std::string& model) {
  if (upstream.credential_env) {
    const char* value = std::getenv(upstream.credential_env->c_str());
    if (value == nullptr || *value == '\0') {
      throw ConfigError("upstream model '" + model + "': environment variable " + *upstream.credential_env +
                        " is not set");
    }
    return value;
  }
  if (upstream.credential_file) {
    const std::vector<std::string> keys = read_api_key_file(*upstream.credential_file);
    return keys.front();
  }
  return "";
}

std::vector<std::string> parse_api_key_list(std::string_view value) {
  std::vector<std::string> keys;
  std::string current;
  for (const char c : std::string(value) + ",") {
    if (c == ',') {
      if (!current.empty()) keys.push_back(current);
      current.clear();
    } else if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
      current += c;
    }
  }
  return keys;
}

std::vector<std::string> read_api_key_file(const std::filesystem::path& path) {
  std::ifstream file(path);
  if (!file) throw ConfigError("cannot read API key file " + path.string());
  std::vector<std::string> keys;
  std::string line;
  while (std::getline(file, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    const size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#') continue;
    keys.push_back(line.substr(start));
  }
  if (keys.empty()) throw ConfigError("API key file " + path.string() + " holds no keys");
  return keys;
}

ServerConfig read_config_file(const std::filesystem::path& path, ServerConfig config) {
  std::ifstream file(path);
  if (!file) throw ConfigError("cannot read config file " + path.string());
  std::stringstream text;
  text << file.rdbuf();
  Json root;
  try {
    root = Json::parse(text.str());
  } catch (const nlohmann::json::exception& error) {
    throw ConfigError(describe(path, std::string("invalid JSON: ") + error.what()));
  }
  if (!root.is_object()) throw ConfigError(describe(path, "the top level must be an object"));
  for (const auto& [key, value] : root.items()) {
    if (key == "host") {
      config.host = read_string(value, path, key);
    } else if (key == "port") {
      config.port = read_number<uint16_t>(value, path, key, 0, 65535);
    } else if (key == "api_keys_file") {
      config.api_keys = read_api_key_file(read_string(value, path, key));
    } else if (key == "max_body_bytes") {
      config.max_body_bytes = read_number<size_t>(value, path, key, 1, size_t{1} << 32);
    } else if (key == "timeout_ms") {
      config.timeout = std::chrono::milliseconds(read_number<int64_t>(value, path, key, 1, 86'400'000));
    } else if (key == "max_questions") {
      config.max_questions = read_number<size_t>(value, path, key, 1, 100'000);
    } else if (key == "max_images") {
      config.max_images = read_number<size_t>(value, path, key, 0, 1'000);
    } else if (key == "max_image_bytes") {
      config.max_image_bytes = read_number<size_t>(value, path, key, 1, size_t{1} << 32);
    } else if (key == "max_image_pixels") {
      config.max_image_pixels = read_number<uint64_t>(value, path, key, 1, uint64_t{1} << 32);
    } else if (key == "token_budget") {
      config.token_budget = read_number<int64_t>(value, path, key, 1, int64_t{1} << 40);
    } else if (key == "queue") {
      config.queue_capacity = read_number<size_t>(value, path, key, 1, 1'000'000);
    } else if (key == "overload_status") {
      config.overload_status = read_number<int>(value, path, key, 503, 529);
      if (config.overload_status != 503 && config.overload_status != 529) {
        throw ConfigError(describe(path, "overload_status must be 503 or 529"));
      }
    } else if (key == "default_model") {
      if (value.is_null()) {
        config.default_model.reset();
      } else {
        config.default_model = read_string(value, path, key);
      }
    } else if (key == "default_model_aliases") {
      config.default_model_aliases = read_names(value, path, key);
    } else if (key == "owned_by") {
      config.owned_by = read_string(value, path, key);
    } else if (key == "drain_ms") {
      config.drain_timeout = std::chrono::milliseconds(read_number<int64_t>(value, path, key, 0, 3'600'000));
    } else if (key == "http_threads") {
      config.http_threads = read_number<int>(value, path, key, 1, 256);
    } else if (key == "prepare_threads") {
      config.prepare_threads = read_number<int>(value, path, key, 1, 256);
    } else if (key == "header_timeout_ms") {
      config.header_timeout = std::chrono::milliseconds(read_number<int64_t>(value, path, key, 1, 3'600'000));
    } else if (key == "max_connections") {
      config.max_connections = read_number<size_t>(value, path, key, 1, 1'000'000);
    } else if (key == "models") {
      if (!value.is_array()) throw ConfigError(describe(path, "models must be an array"));
      size_t index = 0;
      for (const Json& entry : value) {
        config.models.push_back(read_model(entry, path, "models[" + std::to_string(index++) + "]"));
      }
    } else {
      throw ConfigError(describe(path, "unknown setting " + key));
    }
  }
  return config;
}

}  // namespace s1::registry
