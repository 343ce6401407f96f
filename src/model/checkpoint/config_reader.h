#pragma once

#include <concepts>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace s1::checkpoint {

template <typename T>
concept ConfigValue =
    std::same_as<T, int64_t> || std::same_as<T, double> || std::same_as<T, bool> ||
    std::same_as<T, std::string> || std::same_as<T, std::vector<int64_t>> ||
    std::same_as<T, std::vector<double>> || std::same_as<T, std::vector<std::string>>;

// Strict, typed reading of a config.json object. A family reads every setting it understands,
// declares the ones it knowingly ignores, then calls finish(): any key left over is a setting the
// family does not implement, and silently ignoring it could change the model's maths, so it is a
// LoadError. Every error names the source file (and nesting) and the key.
//
// A JSON null counts as absent for the optional readers: Transformers writes unset settings as
// null (e.g. "rope_scaling": null).
class ConfigReader {
 public:
  // Reads and parses the file; the root must be a JSON object.
  static ConfigReader from_file(const std::filesystem::path& path);
  // `source` names the object in errors ("…/config.json", "…/config.json, in 'rope_scaling'").
  ConfigReader(nlohmann::ordered_json object, std::string source);

  template <ConfigValue T>
  T required(std::string_view key);
  template <ConfigValue T>
  std::optional<T> optional(std::string_view key);
  template <ConfigValue T>
  T optional(std::string_view key, T fallback) {
    auto value = optional<T>(key);
    return value ? std::move(*value) : std::move(fallback);
  }

  // Nested objects get their own reader (and their own finish()).
  ConfigReader required_object(std::string_view key);
  std::optional<ConfigReader> optional_object(std::string_view key);

  // Present and not null; does not count as reading the key.
  bool contains(std::string_view key) const;
  // Keys the family knows about and deliberately does not use ("architectures", "torch_dtype").
  void ignore(std::initializer_list<std::string_view> keys);
  // Throws LoadError listing every key neither read nor ignored.
  void finish() const;
  // For values of the right type that the family does not support ("hidden_act": "swish").
  [[noreturn]] void reject(std::string_view key, std::string_view reason) const;
  // For counts and sizes (read with required() or optional()) that must be at least 1.
  void require_positive(std::string_view key, int64_t value) const;

  const std::string& source() const { return source_; }

 private:
  // Marks the key read; nullptr when absent or null.
  const nlohmann::ordered_json* take(std::string_view key);

  nlohmann::ordered_json object_;
  std::string source_;
  std::set<std::string, std::less<>> consumed_;
};

}  // namespace s1::checkpoint
