#include "model/checkpoint/safetensors.h"

#include <algorithm>
#include <cstring>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "model/checkpoint/load_error.h"

namespace s1::checkpoint {
namespace {

using Json = nlohmann::json;

constexpr std::size_t kHeaderLengthBytes = 8;
// A valid header nests at most root → tensor entry → shape array.
constexpr int kMaxHeaderDepth = 3;

class HeaderParser {
 public:
  HeaderParser(std::span<const std::byte> file_bytes, std::string_view file_label)
      : file_bytes_(file_bytes), label_(file_label) {}

  SafetensorsContents parse() {
    if (file_bytes_.size() < kHeaderLengthBytes) {
      fail("file is " + std::to_string(file_bytes_.size()) +
           " bytes, too short for the 8-byte header length");
    }
    uint64_t header_length = 0;
    for (std::size_t i = 0; i < kHeaderLengthBytes; ++i) {
      header_length |= static_cast<uint64_t>(file_bytes_[i]) << (8 * i);
    }
    if (header_length > kMaxSafetensorsHeaderBytes) {
      fail("header length " + std::to_string(header_length) + " exceeds the limit of " +
           std::to_string(kMaxSafetensorsHeaderBytes) + " bytes");
    }
    const std::size_t available = file_bytes_.size() - kHeaderLengthBytes;
    if (header_length > available) {
      fail("header length " + std::to_string(header_length) + " runs past the end of the file (" +
           std::to_string(available) + " bytes follow the length)");
    }
    const auto header = file_bytes_.subspan(kHeaderLengthBytes, header_length);
    data_ = file_bytes_.subspan(kHeaderLengthBytes + header_length);

    const Json root = parse_json(header);
    if (!root.is_object()) fail("header is not a JSON object");

    SafetensorsContents contents;
    for (const auto& [key, value] : root.items()) {
      if (key == "__metadata__") {
        contents.metadata = parse_metadata(value);
      } else {
        contents.tensors.push_back(parse_tensor(key, value));
      }
    }
    check_layout(contents.tensors);
    return contents;
  }

 private:
  [[noreturn]] void fail(const std::string& message) const {
    throw LoadError(label_ + ": " + message);
  }

  [[noreturn]] void fail_tensor(const std::string& tensor, const std::string& message) const {
    fail("tensor '" + tensor + "': " + message);
  }

  Json parse_json(std::span<const std::byte> header) const {
    // nlohmann keeps the last of duplicate keys silently; a header naming a tensor twice is
    // ambiguous, so the callback tracks the keys of every open object and rejects repeats.
    // It also caps nesting so that hostile input cannot build deep trees.
    std::vector<std::set<std::string>> open_objects;
    const auto callback = [&](int depth, Json::parse_event_t event, Json& parsed) {
      switch (event) {
        case Json::parse_event_t::object_start:
        case Json::parse_event_t::array_start:
          if (depth >= kMaxHeaderDepth) fail("header nests deeper than a safetensors header can");
          if (event == Json::parse_event_t::object_start) open_objects.emplace_back();
          break;
        case Json::parse_event_t::object_end:
          open_objects.pop_back();
          break;
        case Json::parse_event_t::key: {
          auto name = parsed.get<std::string>();
          if (!open_objects.back().insert(name).second) {
            fail("header has the key '" + name + "' twice in one object");
          }
          break;
        }
        default:
          break;
      }
      return true;
    };
    const auto* first = reinterpret_cast<const char*>(header.data());
    // nlohmann stops at a NUL as if the input ended, which would accept "{}\0<anything>".
    if (std::memchr(first, 0, header.size()) != nullptr) {
      fail("header is not valid JSON: it contains a NUL byte");
    }
    try {
      return Json::parse(first, first + header.size(), callback);
    } catch (const Json::exception& error) {
      fail(std::string("header is not valid JSON: ") + error.what());
    }
  }

  std::map<std::string, std::string> parse_metadata(const Json& value) const {
    if (!value.is_object()) fail("__metadata__ is not a JSON object");
    std::map<std::string, std::string> metadata;
    for (const auto& [key, entry] : value.items()) {
      if (!entry.is_string()) fail("__metadata__ value for '" + key + "' is not a string");
      metadata.emplace(key, entry.get<std::string>());
    }
    return metadata;
  }

  static std::optional<uint64_t> as_unsigned(const Json& value) {
    // Only non-negative JSON integers land in number_unsigned; floats, negatives and bools do not.
    if (!value.is_number_unsigned()) return std::nullopt;
    return value.get<uint64_t>();
  }

  TensorView parse_tensor(const std::string& name, const Json& entry) const {
    if (!entry.is_object()) fail_tensor(name, "entry is not a JSON object");
    for (const auto& [key, value] : entry.items()) {
      if (key != "dtype" && key != "shape" && key != "data_offsets") {
        fail_tensor(name, "unexpected key '" + key + "'");
      }
    }
    for (const char* key : {"dtype", "shape", "data_offsets"}) {
      if (!entry.contains(key)) fail_tensor(name, std::string("missing '") + key + "'");
    }

    const Json& dtype_json = entry["dtype"];
    if (!dtype_json.is_string()) fail_tensor(name, "dtype is not a string");
    const auto dtype_text = dtype_json.get<std::string>();
    const auto dtype = parse_dtype(dtype_text);
    if (!dtype) fail_tensor(name, "unknown dtype '" + dtype_text + "'");

    const Json& shape_json = entry["shape"];
    if (!shape_json.is_array()) fail_tensor(name, "shape is not an array");
    std::vector<int64_t> shape;
    uint64_t byte_length = dtype_size(*dtype);
    for (const Json& dim_json : shape_json) {
      const auto dim = as_unsigned(dim_json);
      if (!dim || *dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        fail_tensor(name, "shape " + shape_json.dump() + " is not a list of non-negative integers");
      }
      shape.push_back(static_cast<int64_t>(*dim));
      // Checked at every step (as the reference reader does): a wrapped product could otherwise
      // match small offsets. It also keeps TensorView::element_count free of overflow.
      if (__builtin_mul_overflow(byte_length, *dim, &byte_length)) {
        fail_tensor(name, "shape " + shape_json.dump() + " of " + dtype_text +
                              " overflows a 64-bit byte count");
      }
    }

    const Json& offsets_json = entry["data_offsets"];
    if (!offsets_json.is_array() || offsets_json.size() != 2) {
      fail_tensor(name, "data_offsets is not a pair of integers");
    }
    const auto begin = as_unsigned(offsets_json[0]);
    const auto end = as_unsigned(offsets_json[1]);
    if (!begin || !end) fail_tensor(name, "data_offsets is not a pair of non-negative integers");
    if (*begin > *end) fail_tensor(name, "data_offsets " + offsets_json.dump() + " end before they begin");
    if (*end > data_.size()) {
      fail_tensor(name, "data_offsets " + offsets_json.dump() + " run past the data section (" +
                            std::to_string(data_.size()) + " bytes)");
    }
    if (*end - *begin != byte_length) {
      fail_tensor(name, "data_offsets " + offsets_json.dump() + " span " +
                            std::to_string(*end - *begin) + " bytes but shape " +
                            shape_json.dump() + " of " + dtype_text + " needs " +
                            std::to_string(byte_length));
    }
    return TensorView{.name = name,
                      .dtype = *dtype,
                      .shape = std::move(shape),
                      .bytes = data_.subspan(static_cast<std::size_t>(*begin),
                                             static_cast<std::size_t>(byte_length))};
  }

  // Like the reference reader, the tensors must tile the data section exactly: no overlap (two
  // names aliasing one buffer), no holes and no trailing bytes (which would hide unread content).
  void check_layout(std::vector<TensorView>& tensors) const {
    const auto offset_of = [&](const TensorView& tensor) {
      return static_cast<std::size_t>(tensor.bytes.data() - data_.data());
    };
    std::sort(tensors.begin(), tensors.end(), [&](const TensorView& a, const TensorView& b) {
      const auto a_begin = offset_of(a);
      const auto b_begin = offset_of(b);
      return a_begin != b_begin ? a_begin < b_begin : a.bytes.size() < b.bytes.size();
    });
    std::size_t covered = 0;
    const TensorView* previous = nullptr;
    for (const auto& tensor : tensors) {
      const std::size_t begin = offset_of(tensor);
      if (begin < covered) {
        fail_tensor(tensor.name, "data overlaps tensor '" + previous->name + "'");
      }
      if (begin > covered) {
        fail_tensor(tensor.name, "data begins at offset " + std::to_string(begin) +
                                     ", leaving a hole after offset " + std::to_string(covered));
      }
      covered = begin + tensor.bytes.size();
      previous = &tensor;
    }
    if (covered != data_.size()) {
      fail("data section has " + std::to_string(data_.size() - covered) +
           " trailing bytes not covered by any tensor");
    }
  }

  std::span<const std::byte> file_bytes_;
  std::span<const std::byte> data_;
  std::string label_;
};

}  // namespace

SafetensorsContents parse_safetensors(std::span<const std::byte> file_bytes,
                                      std::string_view file_label) {
  return HeaderParser(file_bytes, file_label).parse();
}

}  // namespace s1::checkpoint
