#include "model/checkpoint/gguf.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>

#include "model/checkpoint/load_error.h"

namespace s1::checkpoint {

static_assert(std::endian::native == std::endian::little, "GGUF values are read in place");

namespace {

constexpr std::array<std::byte, 4> kMagic{std::byte{'G'}, std::byte{'G'}, std::byte{'U'}, std::byte{'F'}};

struct TypeEntry {
  GgmlType type;
  GgmlTypeInfo info;
};

// Block layouts from ggml-common.h: QK4_0 = QK5_0 = QK8_0 = 32, QK_K = 256.
constexpr std::array kGgmlTypes{
    TypeEntry{GgmlType::kF32, {"F32", 1, 4}},       TypeEntry{GgmlType::kF16, {"F16", 1, 2}},
    TypeEntry{GgmlType::kQ4_0, {"Q4_0", 32, 18}},   TypeEntry{GgmlType::kQ8_0, {"Q8_0", 32, 34}},
    TypeEntry{GgmlType::kQ4_K, {"Q4_K", 256, 144}}, TypeEntry{GgmlType::kQ5_K, {"Q5_K", 256, 176}},
    TypeEntry{GgmlType::kQ6_K, {"Q6_K", 256, 210}}, TypeEntry{GgmlType::kBF16, {"BF16", 1, 2}},
    TypeEntry{GgmlType::kQ5_0, {"Q5_0", 32, 22}},
};

// Names of the ggml types s1serve does not read, so that the error says what the file holds.
std::string unsupported_type_name(uint32_t id) {
  static constexpr std::array<std::pair<uint32_t, std::string_view>, 21> kNames{{
      {3, "Q4_1"},   {7, "Q5_1"},    {9, "Q8_1"},     {10, "Q2_K"},  {11, "Q3_K"},
      {15, "Q8_K"},  {16, "IQ2_XXS"}, {17, "IQ2_XS"}, {18, "IQ3_XXS"}, {19, "IQ1_S"}, {20, "IQ4_NL"},
      {21, "IQ3_S"}, {22, "IQ2_S"},   {23, "IQ4_XS"}, {24, "I8"},      {25, "I16"},   {26, "I32"},
      {27, "I64"},   {28, "F64"},     {29, "IQ1_M"},  {39, "MXFP4"},
  }};
  for (const auto& [known, name] : kNames) {
    if (known == id) return std::string(name) + " (type id " + std::to_string(id) + ")";
  }
  return "unknown type id " + std::to_string(id);
}

std::size_t fixed_size(GgufType type) {
  switch (type) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kBool:
      return 1;
    case GgufType::kUint16:
    case GgufType::kInt16:
      return 2;
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kFloat32:
      return 4;
    case GgufType::kUint64:
    case GgufType::kInt64:
    case GgufType::kFloat64:
      return 8;
    case GgufType::kString:  // at least its 8-byte length
      return 8;
    case GgufType::kArray:  // at least its element type and count
      return 12;
  }
  return 0;
}

bool valid_type(uint32_t id) { return id <= static_cast<uint32_t>(GgufType::kFloat64); }

std::string quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

}  // namespace

std::string_view gguf_type_name(GgufType type) {
  static constexpr std::array<std::string_view, 13> kNames{"uint8",  "int8",    "uint16", "int16",  "uint32",
                                                           "int32",  "float32", "bool",   "string", "array",
                                                           "uint64", "int64",   "float64"};
  const auto index = static_cast<uint32_t>(type);
  return index < kNames.size() ? kNames[index] : "invalid";
}

std::optional<GgmlType> ggml_type_from_id(uint32_t id) {
  for (const auto& entry : kGgmlTypes) {
    if (static_cast<uint32_t>(entry.type) == id) return entry.type;
  }
  return std::nullopt;
}

const GgmlTypeInfo& ggml_type_info(GgmlType type) {
  for (const auto& entry : kGgmlTypes) {
    if (entry.type == type) return entry.info;
  }
  throw std::logic_error("unhandled GgmlType");
}

int64_t GgufTensor::element_count() const {
  // Checked against overflow when the tensor info was read.
  int64_t count = 1;
  for (int64_t dim : dims) count *= dim;
  return count;
}

std::vector<int64_t> GgufTensor::shape() const { return {dims.rbegin(), dims.rend()}; }

bool has_gguf_magic(std::span<const std::byte> file_bytes) {
  return file_bytes.size() >= kMagic.size() && std::equal(kMagic.begin(), kMagic.end(), file_bytes.begin());
}

class GgufParser {
 public:
  GgufParser(std::span<const std::byte> bytes, std::string_view label) : bytes_(bytes) {
    file_.label = std::string(label);
  }

  GgufFile parse() {
    if (!has_gguf_magic(bytes_)) fail("not a GGUF file (the first 4 bytes are not \"GGUF\")");
    position_ = kMagic.size();
    const auto version = read_fixed<uint32_t>("the version");
    if (version != 2 && version != 3) {
      // A big-endian file reads as a byte-swapped version here.
      if (__builtin_bswap32(version) == 2 || __builtin_bswap32(version) == 3) {
        fail("big-endian GGUF files are not supported");
      }
      fail("GGUF version " + std::to_string(version) + " is not supported (versions 2 and 3 are)");
    }
    file_.version = version;
    const auto tensor_count = read_fixed<uint64_t>("the tensor count");
    const auto kv_count = read_fixed<uint64_t>("the metadata count");
    // Each entry needs at least its key length and value type (metadata) or name length, dims
    // count, type and offset (tensors): a count beyond what the file can hold is rejected before
    // anything is reserved for it.
    check_count(kv_count, 12, "metadata count");
    check_count(tensor_count, 24, "tensor count");

    for (uint64_t i = 0; i < kv_count; ++i) read_entry();
    read_alignment();
    std::vector<Extent> extents;
    extents.reserve(static_cast<std::size_t>(tensor_count));
    file_.tensors.reserve(static_cast<std::size_t>(tensor_count));
    for (uint64_t i = 0; i < tensor_count; ++i) extents.push_back(read_tensor_info());
    place_tensors(extents);
    return std::move(file_);
  }

 private:
  // Where the directory says a tensor's data lies, relative to the data section.
  struct Extent {
    uint64_t offset = 0;
    uint64_t size = 0;
  };

  [[noreturn]] void fail(const std::string& message) const { throw LoadError(file_.label + ": " + message); }

  void need(std::size_t count, const std::string& what) const {
    if (bytes_.size() - position_ < count) {
      fail(what + " runs past the end of the file (offset " + std::to_string(position_) + ", " +
           std::to_string(bytes_.size()) + " bytes)");
    }
  }

  void check_count(uint64_t count, std::size_t min_bytes, const std::string& what) const {
    if (count > (bytes_.size() - position_) / min_bytes) {
      fail(what + " " + std::to_string(count) + " is more than the file could hold");
    }
  }

  template <typename T>
  T read_fixed(const std::string& what) {
    need(sizeof(T), what);
    T value;
    std::memcpy(&value, bytes_.data() + position_, sizeof(T));
    position_ += sizeof(T);
    return value;
  }

  std::string read_string(const std::string& what) {
    const auto length = read_fixed<uint64_t>(what + "'s length");
    if (length > bytes_.size() - position_) {
      fail(what + " of " + std::to_string(length) + " bytes runs past the end of the file");
    }
    std::string text(reinterpret_cast<const char*>(bytes_.data() + position_), static_cast<std::size_t>(length));
    position_ += static_cast<std::size_t>(length);
    return text;
  }

  GgufType read_type(const std::string& what) {
    const auto id = read_fixed<uint32_t>(what);
    if (!valid_type(id)) fail(what + " " + std::to_string(id) + " is not a GGUF value type");
    return static_cast<GgufType>(id);
  }

  GgufValue read_value(GgufType type, const std::string& key, int depth) {
    GgufValue value{.type = type, .value = uint64_t{0}};
    const std::string what = "the value of key " + quoted(key);
    switch (type) {
      case GgufType::kUint8:
        value.value = uint64_t{read_fixed<uint8_t>(what)};
        break;
      case GgufType::kUint16:
        value.value = uint64_t{read_fixed<uint16_t>(what)};
        break;
      case GgufType::kUint32:
        value.value = uint64_t{read_fixed<uint32_t>(what)};
        break;
      case GgufType::kUint64:
        value.value = read_fixed<uint64_t>(what);
        break;
      case GgufType::kInt8:
        value.value = int64_t{read_fixed<int8_t>(what)};
        break;
      case GgufType::kInt16:
        value.value = int64_t{read_fixed<int16_t>(what)};
        break;
      case GgufType::kInt32:
        value.value = int64_t{read_fixed<int32_t>(what)};
        break;
      case GgufType::kInt64:
        value.value = read_fixed<int64_t>(what);
        break;
      case GgufType::kFloat32:
        value.value = double{read_fixed<float>(what)};
        break;
      case GgufType::kFloat64:
        value.value = read_fixed<double>(what);
        break;
      case GgufType::kBool: {
        const auto byte = read_fixed<uint8_t>(what);
        if (byte > 1) fail(what + " is a bool of byte value " + std::to_string(byte));
        value.value = byte == 1;
        break;
      }
      case GgufType::kString:
        value.value = read_string(what);
        break;
      case GgufType::kArray:
        value.value = read_array(key, depth + 1);
        break;
    }
    return value;
  }

  GgufArray read_array(const std::string& key, int depth) {
    if (depth > kGgufMaxArrayDepth) {
      fail("key " + quoted(key) + " nests arrays deeper than " + std::to_string(kGgufMaxArrayDepth) + " levels");
    }
    GgufArray array;
    array.element_type = read_type("the array element type of key " + quoted(key));
    const auto count = read_fixed<uint64_t>("the array length of key " + quoted(key));
    check_count(count, fixed_size(array.element_type), "key " + quoted(key) + ": array length");
    if (count > kGgufMaxValues - values_read_) {
      fail("key " + quoted(key) + ": array length " + std::to_string(count) + " takes the metadata past " +
           std::to_string(kGgufMaxValues) + " values");
    }
    values_read_ += count;
    array.items.reserve(static_cast<std::size_t>(count));
    for (uint64_t i = 0; i < count; ++i) {
      array.items.push_back(read_value(array.element_type, key, depth));
    }
    return array;
  }

  void read_entry() {
    auto key = read_string("a metadata key");
    if (key.empty()) fail("a metadata key is empty");
    const auto type = read_type("the value type of key " + quoted(key));
    auto value = read_value(type, key, 0);
    if (file_.index_.contains(key)) fail("key " + quoted(key) + " appears twice");
    file_.index_.emplace(key, file_.metadata_.size());
    file_.metadata_.emplace_back(std::move(key), std::move(value));
  }

  void read_alignment() {
    const GgufValue* value = file_.find("general.alignment");
    if (value == nullptr) return;
    if (value->type != GgufType::kUint32) {
      file_.fail_key("general.alignment", "is a " + std::string(gguf_type_name(value->type)) + ", expected uint32");
    }
    const auto alignment = std::get<uint64_t>(value->value);
    if (alignment == 0 || !std::has_single_bit(alignment)) {
      file_.fail_key("general.alignment", "is " + std::to_string(alignment) + ", expected a power of two");
    }
    file_.alignment = static_cast<std::size_t>(alignment);
  }

  Extent read_tensor_info() {
    auto name = read_string("a tensor name");
    const auto fail_tensor = [&](const std::string& message) { fail("tensor " + quoted(name) + ": " + message); };
    if (name.empty()) fail("a tensor name is empty");
    if (file_.tensor_index_.contains(name)) fail_tensor("appears twice in the tensor directory");
    const auto n_dims = read_fixed<uint32_t>("the dimension count of tensor " + quoted(name));
    if (n_dims > kGgufMaxDims) {
      fail_tensor(std::to_string(n_dims) + " dimensions, more than the " + std::to_string(kGgufMaxDims) +
                  " ggml allows");
    }
    GgufTensor tensor;
    tensor.name = name;
    int64_t elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const auto dim = read_fixed<uint64_t>("a dimension of tensor " + quoted(name));
      if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
          __builtin_mul_overflow(elements, static_cast<int64_t>(dim), &elements)) {
        fail_tensor("dimensions overflow a 64-bit element count");
      }
      tensor.dims.push_back(static_cast<int64_t>(dim));
    }
    const auto type_id = read_fixed<uint32_t>("the type of tensor " + quoted(name));
    const auto type = ggml_type_from_id(type_id);
    if (!type) fail_tensor("has type " + unsupported_type_name(type_id) + ", which s1serve does not read");
    tensor.type = *type;
    const auto& info = ggml_type_info(*type);
    const int64_t row = tensor.dims.empty() ? 1 : tensor.dims[0];
    if (row % info.block_elements != 0) {
      fail_tensor("innermost dimension " + std::to_string(row) + " is not a multiple of the " + std::string(info.name) +
                  " block size " + std::to_string(info.block_elements));
    }
    uint64_t byte_count = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(elements / info.block_elements),
                               static_cast<uint64_t>(info.block_bytes), &byte_count) ||
        byte_count > bytes_.size()) {
      fail_tensor("needs more bytes than the file holds");
    }
    const auto offset = read_fixed<uint64_t>("the data offset of tensor " + quoted(name));
    file_.tensor_index_.emplace(std::move(name), file_.tensors.size());
    file_.tensors.push_back(std::move(tensor));
    return {.offset = offset, .size = byte_count};
  }

  // llama.cpp's own rule: tensors lie in directory order, each at the running total of the
  // sizes before it padded to the alignment. This rules out overlaps, holes and aliasing at once.
  void place_tensors(const std::vector<Extent>& extents) {
    const std::size_t alignment = file_.alignment;
    const auto pad = [alignment](uint64_t size) { return (size + alignment - 1) / alignment * alignment; };
    // The header is at most the file, so padding it cannot overflow.
    const uint64_t data_start = file_.tensors.empty() ? position_ : pad(position_);
    if (data_start > bytes_.size()) fail("the data section starts past the end of the file");
    const uint64_t data_size = bytes_.size() - data_start;
    uint64_t expected = 0;
    for (std::size_t i = 0; i < file_.tensors.size(); ++i) {
      GgufTensor& tensor = file_.tensors[i];
      const uint64_t size = extents[i].size;
      if (extents[i].offset != expected) {
        fail("tensor " + quoted(tensor.name) + " has data offset " + std::to_string(extents[i].offset) + ", expected " +
             std::to_string(expected) + " (tensors must follow each other in order, each aligned to " +
             std::to_string(alignment) + " bytes)");
      }
      if (size > data_size || expected > data_size - size) {
        fail("tensor " + quoted(tensor.name) + ": data (" + std::to_string(size) + " bytes at offset " +
             std::to_string(expected) + ") runs past the end of the file (" + std::to_string(data_size) +
             " bytes of data)");
      }
      tensor.bytes = bytes_.subspan(static_cast<std::size_t>(data_start + expected), static_cast<std::size_t>(size));
      expected = pad(expected + size);
    }
  }

  std::span<const std::byte> bytes_;
  std::size_t position_ = 0;
  uint64_t values_read_ = 0;
  GgufFile file_;
};

const GgufValue* GgufFile::find(std::string_view key) const {
  const auto it = index_.find(key);
  return it == index_.end() ? nullptr : &metadata_[it->second].second;
}

const GgufTensor* GgufFile::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors[it->second];
}

void GgufFile::fail_key(std::string_view key, const std::string& message) const {
  throw LoadError(label + ": key " + quoted(key) + " " + message);
}

namespace {

std::string type_description(const GgufValue& value) {
  if (value.type != GgufType::kArray) return std::string(gguf_type_name(value.type));
  return "array of " + std::string(gguf_type_name(std::get<GgufArray>(value.value).element_type));
}

bool is_unsigned(GgufType type) {
  return type == GgufType::kUint8 || type == GgufType::kUint16 || type == GgufType::kUint32 ||
         type == GgufType::kUint64;
}

bool is_signed(GgufType type) {
  return type == GgufType::kInt8 || type == GgufType::kInt16 || type == GgufType::kInt32 || type == GgufType::kInt64;
}

bool is_float(GgufType type) { return type == GgufType::kFloat32 || type == GgufType::kFloat64; }

// The value as an integer, if it is one that fits the target.
std::optional<uint64_t> unsigned_of(const GgufValue& value) {
  if (is_unsigned(value.type)) return std::get<uint64_t>(value.value);
  if (is_signed(value.type) && std::get<int64_t>(value.value) >= 0) {
    return static_cast<uint64_t>(std::get<int64_t>(value.value));
  }
  return std::nullopt;
}

std::optional<int64_t> signed_of(const GgufValue& value) {
  if (is_signed(value.type)) return std::get<int64_t>(value.value);
  if (is_unsigned(value.type) &&
      std::get<uint64_t>(value.value) <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return static_cast<int64_t>(std::get<uint64_t>(value.value));
  }
  return std::nullopt;
}

}  // namespace

std::optional<uint64_t> GgufFile::get_uint(std::string_view key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return std::nullopt;
  const auto result = unsigned_of(*value);
  if (!result) fail_key(key, "is a " + type_description(*value) + ", expected a non-negative integer");
  return result;
}

std::optional<int64_t> GgufFile::get_int(std::string_view key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return std::nullopt;
  const auto result = signed_of(*value);
  if (!result) fail_key(key, "is a " + type_description(*value) + ", expected an integer");
  return result;
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return std::nullopt;
  if (!is_float(value->type)) fail_key(key, "is a " + type_description(*value) + ", expected a float");
  return std::get<double>(value->value);
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return std::nullopt;
  if (value->type != GgufType::kBool) fail_key(key, "is a " + type_description(*value) + ", expected a bool");
  return std::get<bool>(value->value);
}

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return std::nullopt;
  if (value->type != GgufType::kString) fail_key(key, "is a " + type_description(*value) + ", expected a string");
  return std::get<std::string>(value->value);
}

namespace {

// The items of an array value whose elements satisfy `accepts`; nullptr when it is something else.
template <typename Accepts>
const std::vector<GgufValue>* array_items(const GgufValue& value, Accepts accepts) {
  if (value.type != GgufType::kArray) return nullptr;
  const auto& array = std::get<GgufArray>(value.value);
  return accepts(array.element_type) ? &array.items : nullptr;
}

}  // namespace

std::optional<std::vector<std::string>> GgufFile::get_strings(std::string_view key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return std::nullopt;
  const auto* items = array_items(*value, [](GgufType type) { return type == GgufType::kString; });
  if (items == nullptr) fail_key(key, "is a " + type_description(*value) + ", expected an array of string");
  std::vector<std::string> result;
  result.reserve(items->size());
  for (const auto& item : *items) result.push_back(std::get<std::string>(item.value));
  return result;
}

std::optional<std::vector<double>> GgufFile::get_floats(std::string_view key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return std::nullopt;
  const auto* items = array_items(*value, is_float);
  if (items == nullptr) fail_key(key, "is a " + type_description(*value) + ", expected an array of float");
  std::vector<double> result;
  result.reserve(items->size());
  for (const auto& item : *items) result.push_back(std::get<double>(item.value));
  return result;
}

std::optional<std::vector<int64_t>> GgufFile::get_ints(std::string_view key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return std::nullopt;
  const auto* items = array_items(*value, [](GgufType type) { return is_signed(type) || is_unsigned(type); });
  if (items == nullptr) fail_key(key, "is a " + type_description(*value) + ", expected an array of integers");
  std::vector<int64_t> result;
  result.reserve(items->size());
  for (const auto& item : *items) {
    const auto number = signed_of(item);
    if (!number) fail_key(key, "holds an integer beyond the signed 64-bit range");
    result.push_back(*number);
  }
  return result;
}

GgufFile parse_gguf(std::span<const std::byte> file_bytes, std::string_view file_label) {
  return GgufParser(file_bytes, file_label).parse();
}

}  // namespace s1::checkpoint
