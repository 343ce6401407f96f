#include "model/checkpoint/config_reader.h"

#include <fstream>
#include <limits>
#include <sstream>

#include "model/checkpoint/load_error.h"

namespace s1::checkpoint {
namespace {

using Json = nlohmann::ordered_json;

// config.json files are a few kilobytes; the cap only stops a wrong path from reading gigabytes.
constexpr std::uintmax_t kMaxConfigBytes = 16 * 1024 * 1024;

std::string json_type_name(const Json& value) {
  if (value.is_number_integer()) return "integer";
  if (value.is_number_float()) return "number";
  return value.type_name();
}

template <typename T>
struct ValueTraits;

template <>
struct ValueTraits<int64_t> {
  static constexpr std::string_view kName = "integer";
  static std::optional<int64_t> convert(const Json& value) {
    if (value.is_number_unsigned()) {
      const auto unsigned_value = value.get<uint64_t>();
      if (unsigned_value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return std::nullopt;
      }
      return static_cast<int64_t>(unsigned_value);
    }
    if (value.is_number_integer()) return value.get<int64_t>();
    return std::nullopt;
  }
};

template <>
struct ValueTraits<double> {
  static constexpr std::string_view kName = "number";
  static std::optional<double> convert(const Json& value) {
    if (!value.is_number()) return std::nullopt;
    return value.get<double>();
  }
};

template <>
struct ValueTraits<bool> {
  static constexpr std::string_view kName = "boolean";
  static std::optional<bool> convert(const Json& value) {
    if (!value.is_boolean()) return std::nullopt;
    return value.get<bool>();
  }
};

template <>
struct ValueTraits<std::string> {
  static constexpr std::string_view kName = "string";
  static std::optional<std::string> convert(const Json& value) {
    if (!value.is_string()) return std::nullopt;
    return value.get<std::string>();
  }
};

template <typename Element>
struct ValueTraits<std::vector<Element>> {
  static std::optional<std::vector<Element>> convert(const Json& value) {
    if (!value.is_array()) return std::nullopt;
    std::vector<Element> result;
    result.reserve(value.size());
    for (const Json& item : value) {
      auto converted = ValueTraits<Element>::convert(item);
      if (!converted) return std::nullopt;
      result.push_back(std::move(*converted));
    }
    return result;
  }
};

template <typename T>
std::string expected_name() {
  if constexpr (std::same_as<T, std::vector<int64_t>>) {
    return "array of integers";
  } else if constexpr (std::same_as<T, std::vector<double>>) {
    return "array of numbers";
  } else if constexpr (std::same_as<T, std::vector<std::string>>) {
    return "array of strings";
  } else {
    return std::string(ValueTraits<T>::kName);
  }
}

}  // namespace

ConfigReader ConfigReader::from_file(const std::filesystem::path& path) {
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);
  if (error) throw LoadError(path.string() + ": cannot read: " + error.message());
  if (size > kMaxConfigBytes) {
    throw LoadError(path.string() + ": " + std::to_string(size) +
                    " bytes is too large for a config file");
  }
  std::ifstream stream(path, std::ios::binary);
  std::stringstream text;
  text << stream.rdbuf();
  if (!stream) throw LoadError(path.string() + ": cannot read");
  try {
    return ConfigReader(Json::parse(text.str()), path.string());
  } catch (const Json::exception& parse_error) {
    throw LoadError(path.string() + ": not valid JSON: " + parse_error.what());
  }
}

ConfigReader::ConfigReader(Json object, std::string source)
    : object_(std::move(object)), source_(std::move(source)) {
  if (!object_.is_object()) {
    throw LoadError(source_ + ": expected a JSON object, got " + json_type_name(object_));
  }
}

const Json* ConfigReader::take(std::string_view key) {
  consumed_.emplace(key);
  const auto it = object_.find(std::string(key));
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

template <ConfigValue T>
std::optional<T> ConfigReader::optional(std::string_view key) {
  const Json* value = take(key);
  if (value == nullptr) return std::nullopt;
  auto converted = ValueTraits<T>::convert(*value);
  if (!converted) {
    throw LoadError(source_ + ": key '" + std::string(key) + "': expected " + expected_name<T>() +
                    ", got " + json_type_name(*value) + " " + value->dump());
  }
  return converted;
}

template <ConfigValue T>
T ConfigReader::required(std::string_view key) {
  if (!contains(key)) {
    consumed_.emplace(key);
    throw LoadError(source_ + ": required key '" + std::string(key) + "' (" + expected_name<T>() +
                    ") is missing or null");
  }
  return *optional<T>(key);
}

ConfigReader ConfigReader::required_object(std::string_view key) {
  auto nested = optional_object(key);
  if (!nested) {
    throw LoadError(source_ + ": required key '" + std::string(key) +
                    "' (object) is missing or null");
  }
  return std::move(*nested);
}

std::optional<ConfigReader> ConfigReader::optional_object(std::string_view key) {
  const Json* value = take(key);
  if (value == nullptr) return std::nullopt;
  if (!value->is_object()) {
    throw LoadError(source_ + ": key '" + std::string(key) + "': expected object, got " +
                    json_type_name(*value));
  }
  return ConfigReader(*value, source_ + ", in '" + std::string(key) + "'");
}

bool ConfigReader::contains(std::string_view key) const {
  const auto it = object_.find(std::string(key));
  return it != object_.end() && !it->is_null();
}

void ConfigReader::ignore(std::initializer_list<std::string_view> keys) {
  for (std::string_view key : keys) consumed_.emplace(key);
}

void ConfigReader::finish() const {
  std::string unknown;
  for (const auto& [key, value] : object_.items()) {
    if (consumed_.contains(key)) continue;
    unknown += unknown.empty() ? "'" : ", '";
    unknown += key + "'";
  }
  if (!unknown.empty()) {
    throw LoadError(source_ + ": unknown or unsupported keys: " + unknown);
  }
}

void ConfigReader::reject(std::string_view key, std::string_view reason) const {
  throw LoadError(source_ + ": key '" + std::string(key) + "': " + std::string(reason));
}

void ConfigReader::require_positive(std::string_view key, int64_t value) const {
  if (value <= 0) reject(key, "must be a positive integer");
}

template int64_t ConfigReader::required<int64_t>(std::string_view);
template double ConfigReader::required<double>(std::string_view);
template bool ConfigReader::required<bool>(std::string_view);
template std::string ConfigReader::required<std::string>(std::string_view);
template std::vector<int64_t> ConfigReader::required<std::vector<int64_t>>(std::string_view);
template std::vector<double> ConfigReader::required<std::vector<double>>(std::string_view);
template std::vector<std::string> ConfigReader::required<std::vector<std::string>>(
    std::string_view);
template std::optional<int64_t> ConfigReader::optional<int64_t>(std::string_view);
template std::optional<double> ConfigReader::optional<double>(std::string_view);
template std::optional<bool> ConfigReader::optional<bool>(std::string_view);
template std::optional<std::string> ConfigReader::optional<std::string>(std::string_view);
template std::optional<std::vector<int64_t>> ConfigReader::optional<std::vector<int64_t>>(
    std::string_view);
template std::optional<std::vector<double>> ConfigReader::optional<std::vector<double>>(
    std::string_view);
template std::optional<std::vector<std::string>>
ConfigReader::optional<std::vector<std::string>>(std::string_view);

}  // namespace s1::checkpoint
