#pragma once
// GGUF (llama.cpp's single-file checkpoint format), versions 2 and 3, little-endian: the metadata
// key/value table and the tensor directory, fully validated against the bytes of the file.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace s1::checkpoint {

inline constexpr std::size_t kGgufDefaultAlignment = 32;
// ggml's GGML_MAX_DIMS: a tensor info with more dimensions is not one ggml could have written.
inline constexpr uint32_t kGgufMaxDims = 4;
// Arrays of arrays are legal, but no writer nests deeply; the cap keeps hostile input from
// recursing the parser off its stack.
inline constexpr int kGgufMaxArrayDepth = 8;
// Metadata values in all arrays together. The largest vocabularies have a few hundred thousand
// tokens and merges; each value costs tens of bytes in memory, so a cap bounds what a small
// hostile file can make us allocate.
inline constexpr uint64_t kGgufMaxValues = uint64_t{1} << 24;

// The value types of the GGUF metadata table, with their on-disk ids.
enum class GgufType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

std::string_view gguf_type_name(GgufType type);

struct GgufValue;

struct GgufArray {
  GgufType element_type = GgufType::kUint8;
  std::vector<GgufValue> items;
};

// One metadata value. Integers keep their on-disk type in `type`; the variant holds them widened
// (unsigned types as uint64_t, signed as int64_t, floats as double) so that callers read them
// without a switch over twelve types.
struct GgufValue {
  GgufType type = GgufType::kUint8;
  std::variant<uint64_t, int64_t, double, bool, std::string, GgufArray> value;
};

// ggml's tensor types that s1serve reads, with their on-disk ids; any other id is a LoadError
// naming the tensor and the type.
enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ5_0 = 6,
  kQ8_0 = 8,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kBF16 = 30,
};

struct GgmlTypeInfo {
  std::string_view name;
  int64_t block_elements;  // values per block (1 for the float types)
  std::size_t block_bytes;
};

// nullopt for a type id s1serve does not read.
std::optional<GgmlType> ggml_type_from_id(uint32_t id);
const GgmlTypeInfo& ggml_type_info(GgmlType type);

struct GgufTensor {
  std::string name;
  GgmlType type = GgmlType::kF32;
  // ggml's ne[]: the innermost (contiguous) dimension first.
  std::vector<int64_t> dims;
  std::span<const std::byte> bytes;  // into the file

  int64_t element_count() const;
  // Row-major, outermost first: what a safetensors file of the same tensor would say.
  std::vector<int64_t> shape() const;
};

class GgufFile {
 public:
  uint32_t version = 0;
  std::size_t alignment = kGgufDefaultAlignment;
  std::vector<GgufTensor> tensors;  // in directory order
  std::string label;                // names the file in errors

  // In file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
  const GgufValue* find(std::string_view key) const;
  const GgufTensor* find_tensor(std::string_view name) const;

  // Typed readers: nullopt when the key is absent; a LoadError naming the key when it holds
  // another type (an unsigned reader accepts any integer type whose value is non-negative).
  std::optional<uint64_t> get_uint(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;
  std::optional<std::string> get_string(std::string_view key) const;
  // Arrays of the named element kind.
  std::optional<std::vector<std::string>> get_strings(std::string_view key) const;
  std::optional<std::vector<double>> get_floats(std::string_view key) const;
  std::optional<std::vector<int64_t>> get_ints(std::string_view key) const;

  // A key that must be present.
  template <typename T>
  T require(std::optional<T> value, std::string_view key) const {
    if (!value) fail_key(key, "is missing");
    return std::move(*value);
  }
  [[noreturn]] void fail_key(std::string_view key, const std::string& message) const;

 private:
  friend class GgufParser;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::map<std::string, std::size_t, std::less<>> index_;
  std::map<std::string, std::size_t, std::less<>> tensor_index_;
};

// Parses and validates a GGUF file held in memory (normally its mmap): magic, version, every
// metadata entry, general.alignment, every tensor info (dims, type, size, alignment, offsets that
// tile the data section in order without overlap) and that all data lies inside the file. The
// tensor views point into `file_bytes`. Throws LoadError naming `file_label` and the key or tensor.
// This is the trust boundary for GGUF bytes, and the fuzz target's entry point.
GgufFile parse_gguf(std::span<const std::byte> file_bytes, std::string_view file_label);

// True when the bytes start with the GGUF magic.
bool has_gguf_magic(std::span<const std::byte> file_bytes);

}  // namespace s1::checkpoint
