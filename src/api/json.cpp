#include "api/json.h"

#include "api/plain_json_scan.h"

#include <charconv>
#include <cmath>
#include <memory_resource>
#include <unordered_set>
#include <vector>

namespace s1::api {
namespace {

// The rules nlohmann's parser leaves to the caller (duplicate member names, non-finite numbers,
// depth, binary values, the error messages), shared by every handler so the DOM builder and the
// scanner give the same verdict with the same message.
class StrictRules {
 public:
  // Key sets live in an arena that starts on the stack: most documents then parse without
  // allocating for duplicate detection.
  StrictRules() : arena_(arena_buffer_, sizeof arena_buffer_) {}

  size_t depth() const { return depth_; }
  const std::string& message() const { return message_; }

  bool open() {
    if (static_cast<int>(depth_) >= max_json_depth) {
      return fail("JSON nesting deeper than " + std::to_string(max_json_depth));
    }
    if (depth_ == frames_.size()) frames_.emplace_back();
    frames_[depth_].clear();
    ++depth_;
    return true;
  }

  void close() { --depth_; }

  bool key(const std::string& name) {
    if (!frames_[depth_ - 1].emplace(std::string_view(name)).second) return fail("JSON object has a duplicate member name");
    return true;
  }

  bool number(double value) { return std::isfinite(value) || fail("JSON number out of range"); }
  bool binary() { return fail("JSON binary values are not allowed"); }

  bool parse_error(std::size_t position, const nlohmann::detail::exception& error) {
    if (!failed_) {
      const std::string_view what = error.what();
      std::string reason = "JSON syntax error";
      if (what.find("UTF-8") != std::string_view::npos) {
        reason = "invalid UTF-8 in JSON text";
      } else if (what.find("surrogate") != std::string_view::npos) {
        reason = "invalid surrogate escape in JSON string";
      } else if (what.find("end of input") != std::string_view::npos) {
        reason = "unexpected end of JSON input";
      } else if (what.find("control character") != std::string_view::npos) {
        reason = "unescaped control character in JSON string";
      }
      message_ = reason + " at byte " + std::to_string(position > 0 ? position - 1 : 0);
      failed_ = true;
    }
    return false;
  }

  bool fail(std::string message) {
    if (!failed_) {
      message_ = std::move(message);
      failed_ = true;
    }
    return false;
  }

 private:
  using KeySet = std::pmr::unordered_set<std::pmr::string>;  // objects only: O(1) duplicate detection

  std::byte arena_buffer_[4096];
  std::pmr::monotonic_buffer_resource arena_;
  std::pmr::vector<KeySet> frames_{&arena_};  // frames_[0, depth_) are the open containers
  size_t depth_ = 0;
  std::string message_;
  bool failed_ = false;
};

// Builds an ordered_json under StrictRules.
class StrictBuilder final : public nlohmann::json_sax<Json> {
 public:
  explicit StrictBuilder(Json& root) : root_(root) {}

  bool null() override { return add(Json(nullptr)); }
  bool boolean(bool value) override { return add(Json(value)); }
  bool number_integer(number_integer_t value) override { return add(Json(value)); }
  bool number_unsigned(number_unsigned_t value) override { return add(Json(value)); }
  bool number_float(number_float_t value, const string_t& /*raw*/) override {
    return rules_.number(value) && add(Json(value));
  }
  bool string(string_t& value) override { return add(Json(std::move(value))); }
  bool binary(binary_t& /*value*/) override { return rules_.binary(); }

  bool start_object(std::size_t /*size*/) override { return open(Json::object()); }
  bool end_object() override { return close(); }
  bool start_array(std::size_t /*size*/) override { return open(Json::array()); }
  bool end_array() override { return close(); }

  bool key(string_t& value) override {
    if (!rules_.key(value)) return false;
    pending_key_ = std::move(value);
    return true;
  }

  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& error) override {
    return rules_.parse_error(position, error);
  }

  const std::string& message() const { return rules_.message(); }

 private:
  // Places a value in the current container and returns where it now lives.
  Json* place(Json&& value) {
    if (containers_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Json& container = *containers_.back();
    if (container.is_array()) {
      auto& array = container.get_ref<Json::array_t&>();
      array.push_back(std::move(value));
      return &array.back();
    }
    // The key is known unique, so append directly instead of ordered_map's linear search.
    auto& object = container.get_ref<Json::object_t&>();
    object.Container::emplace_back(std::move(pending_key_), std::move(value));
    return &object.Container::back().second;
  }

  bool add(Json&& value) {
    place(std::move(value));
    return true;
  }

  bool open(Json&& container) {
    if (!rules_.open()) return false;
    containers_.push_back(place(std::move(container)));
    return true;
  }

  bool close() {
    rules_.close();
    containers_.pop_back();
    return true;
  }

  Json& root_;
  StrictRules rules_;
  std::vector<Json*> containers_;
  std::string pending_key_;
};

// Checks a text under StrictRules without building it, noting one top-level member.
class TopLevelScanner final : public nlohmann::json_sax<Json> {
 public:
  explicit TopLevelScanner(std::string_view name) : name_(name) {}

  bool null() override { return note(TopLevelMember::Kind::null); }
  bool boolean(bool /*value*/) override { return note(TopLevelMember::Kind::other); }
  bool number_integer(number_integer_t /*value*/) override { return note(TopLevelMember::Kind::other); }
  bool number_unsigned(number_unsigned_t /*value*/) override { return note(TopLevelMember::Kind::other); }
  bool number_float(number_float_t value, const string_t& /*raw*/) override {
    return rules_.number(value) && note(TopLevelMember::Kind::other);
  }
  bool string(string_t& value) override {
    if (at_member_) scan_.member.text = std::move(value);
    return note(TopLevelMember::Kind::string);
  }
  bool binary(binary_t& /*value*/) override { return rules_.binary(); }

  bool start_object(std::size_t /*size*/) override {
    if (rules_.depth() == 0) scan_.object = true;
    return note(TopLevelMember::Kind::other) && rules_.open();
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t /*size*/) override { return note(TopLevelMember::Kind::other) && rules_.open(); }
  bool end_array() override { return close(); }

  bool key(string_t& value) override {
    at_member_ = rules_.depth() == 1 && value == name_;
    return rules_.key(value);
  }

  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& error) override {
    return rules_.parse_error(position, error);
  }

  const std::string& message() const { return rules_.message(); }
  StrictJsonScan& scan() { return scan_; }

 private:
  bool note(TopLevelMember::Kind kind) {
    if (at_member_) {
      scan_.member.kind = kind;
      at_member_ = false;
    }
    return true;
  }

  bool close() {
    rules_.close();
    return true;
  }

  std::string_view name_;
  StrictRules rules_;
  StrictJsonScan scan_;
  bool at_member_ = false;  // the next value is the top-level member's
};

bool starts_with_bom(std::string_view text) {
  return text.size() >= 3 && static_cast<unsigned char>(text[0]) == 0xEF &&
         static_cast<unsigned char>(text[1]) == 0xBB && static_cast<unsigned char>(text[2]) == 0xBF;
}

constexpr std::string_view bom_message = "JSON text must not start with a byte-order mark";

const char* hex_digits = "0123456789abcdef";

void append_escaped_code_unit(std::string& out, unsigned value) {
  out += "\\u00";
  out += hex_digits[(value >> 4) & 0xF];
  out += hex_digits[value & 0xF];
}

}  // namespace

std::variant<Json, JsonSyntaxError> parse_strict_json(std::string_view text) {
  if (starts_with_bom(text)) return JsonSyntaxError{std::string(bom_message)};
  Json root;
  StrictBuilder builder(root);
  const bool ok = Json::sax_parse(text.begin(), text.end(), &builder, Json::input_format_t::json,
                                  /*strict=*/true, /*ignore_comments=*/false);
  if (!ok) {
    return JsonSyntaxError{builder.message().empty() ? "JSON syntax error" : builder.message()};
  }
  return root;
}

std::variant<StrictJsonScan, JsonSyntaxError> scan_strict_json(std::string_view text, std::string_view member) {
  if (auto plain = scan_plain_json(text, member)) return std::move(*plain);
  if (starts_with_bom(text)) return JsonSyntaxError{std::string(bom_message)};
  TopLevelScanner scanner(member);
  const bool ok = Json::sax_parse(text.begin(), text.end(), &scanner, Json::input_format_t::json,
                                  /*strict=*/true, /*ignore_comments=*/false);
  if (!ok) {
    return JsonSyntaxError{scanner.message().empty() ? "JSON syntax error" : scanner.message()};
  }
  return std::move(scanner.scan());
}

TopLevelMember top_level_member(const Json& root, std::string_view member) {
  TopLevelMember found;
  if (!root.is_object()) return found;
  const auto value = root.find(member);
  if (value == root.end()) return found;
  if (value->is_null()) {
    found.kind = TopLevelMember::Kind::null;
  } else if (value->is_string()) {
    found.kind = TopLevelMember::Kind::string;
    found.text = value->get_ref<const std::string&>();
  } else {
    found.kind = TopLevelMember::Kind::other;
  }
  return found;
}

void append_json_double(std::string& out, double value) {
  if (value == 0.0) value = 0.0;  // never "-0.0"
  char buffer[64];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
  const std::string_view written(buffer, static_cast<size_t>(end - buffer));
  out += written;
  if (written.find_first_of(".e") == std::string_view::npos) out += ".0";
}

void append_json_string(std::string& out, std::string_view utf8) {
  out += '"';
  for (size_t i = 0; i < utf8.size(); ++i) {
    const auto byte = static_cast<unsigned char>(utf8[i]);
    switch (byte) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (byte < 0x20 || byte == 0x7F) {
      append_escaped_code_unit(out, byte);
    } else if (byte == 0xC2 && i + 1 < utf8.size() && static_cast<unsigned char>(utf8[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(utf8[i + 1]) <= 0x9F) {
      // U+0080–009F (C1 controls) are category Cc too.
      append_escaped_code_unit(out, static_cast<unsigned char>(utf8[i + 1]));
      ++i;
    } else {
      out += static_cast<char>(byte);
    }
  }
  out += '"';
}

void append_json(std::string& out, const Json& value) {
  switch (value.type()) {
    case Json::value_t::null: out += "null"; break;
    case Json::value_t::boolean: out += value.get<bool>() ? "true" : "false"; break;
    case Json::value_t::number_integer: out += std::to_string(value.get<int64_t>()); break;
    case Json::value_t::number_unsigned: out += std::to_string(value.get<uint64_t>()); break;
    case Json::value_t::number_float: append_json_double(out, value.get<double>()); break;
    case Json::value_t::string: append_json_string(out, value.get_ref<const std::string&>()); break;
    case Json::value_t::array: {
      out += '[';
      bool first = true;
      for (const Json& element : value) {
        if (!first) out += ',';
        first = false;
        append_json(out, element);
      }
      out += ']';
      break;
    }
    case Json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, element] : value.items()) {
        if (!first) out += ',';
        first = false;
        append_json_string(out, key);
        out += ':';
        append_json(out, element);
      }
      out += '}';
      break;
    }
    case Json::value_t::binary:
    case Json::value_t::discarded: out += "null"; break;
  }
}

size_t count_code_points(std::string_view utf8) {
  size_t count = 0;
  for (const char c : utf8) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++count;
  }
  return count;
}

bool has_control_character(std::string_view utf8) {
  for (size_t i = 0; i < utf8.size(); ++i) {
    const auto byte = static_cast<unsigned char>(utf8[i]);
    if (byte < 0x20 || byte == 0x7F) return true;
    if (byte == 0xC2 && i + 1 < utf8.size()) {
      const auto next = static_cast<unsigned char>(utf8[i + 1]);
      if (next >= 0x80 && next <= 0x9F) return true;
    }
  }
  return false;
}

}  // namespace s1::api
