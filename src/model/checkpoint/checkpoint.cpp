#include "model/checkpoint/checkpoint.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "model/checkpoint/gguf_weights.h"
#include "model/checkpoint/load_error.h"
#include "model/checkpoint/safetensors.h"

namespace s1::checkpoint {
namespace {

// The index is a name → file table; anything near this size is not one.
constexpr std::uintmax_t kMaxIndexBytes = 100'000'000;

bool name_less(const TensorView& a, const TensorView& b) { return a.name < b.name; }

nlohmann::json read_index_json(const std::filesystem::path& index_file) {
  std::error_code error;
  const auto size = std::filesystem::file_size(index_file, error);
  if (error) throw LoadError(index_file.string() + ": cannot read: " + error.message());
  if (size > kMaxIndexBytes) {
    throw LoadError(index_file.string() + ": " + std::to_string(size) +
                    " bytes is too large for a shard index");
  }
  std::ifstream stream(index_file, std::ios::binary);
  std::stringstream text;
  text << stream.rdbuf();
  if (!stream) throw LoadError(index_file.string() + ": cannot read");
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& parse_error) {
    throw LoadError(index_file.string() + ": not valid JSON: " + parse_error.what());
  }
}

// weight_map: tensor name → shard file name, checked to be a plain file name so that an index
// cannot point outside its directory.
std::map<std::string, std::string> read_weight_map(const std::filesystem::path& index_file) {
  const auto fail = [&](const std::string& message) {
    throw LoadError(index_file.string() + ": " + message);
  };
  const nlohmann::json root = read_index_json(index_file);
  if (!root.is_object()) fail("not a JSON object");
  for (const auto& [key, value] : root.items()) {
    if (key != "metadata" && key != "weight_map") fail("unexpected key '" + key + "'");
  }
  if (!root.contains("weight_map") || !root["weight_map"].is_object()) {
    fail("'weight_map' is missing or not an object");
  }
  std::map<std::string, std::string> weight_map;
  for (const auto& [name, shard] : root["weight_map"].items()) {
    if (!shard.is_string()) fail("weight_map entry for tensor '" + name + "' is not a string");
    auto shard_name = shard.get<std::string>();
    if (shard_name.empty() || shard_name == "." || shard_name == ".." ||
        shard_name.find('/') != std::string::npos || shard_name.find('\0') != std::string::npos) {
      fail("weight_map entry for tensor '" + name + "' is not a plain file name: '" + shard_name +
           "'");
    }
    weight_map.emplace(name, std::move(shard_name));
  }
  return weight_map;
}

}  // namespace

Checkpoint::Checkpoint(std::filesystem::path source, std::vector<MappedFile> files,
                       std::vector<TensorView> tensors)
    : source_(std::move(source)), files_(std::move(files)), tensors_(std::move(tensors)) {
  std::sort(tensors_.begin(), tensors_.end(), name_less);
}

void Checkpoint::release_pages(const TensorView& tensor) const {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(tensor.bytes.data());
  const std::uintptr_t end = begin + tensor.bytes.size();
  for (const MappedFile& file : files_) {
    const auto first = reinterpret_cast<std::uintptr_t>(file.bytes().data());
    if (begin < first || end > first + file.bytes().size()) continue;
    // Whole pages only, from the first page boundary in the tensor to the last: a page shared with
    // a neighbour stays, since the neighbour may still be read.
    const std::uintptr_t from = (begin + page - 1) / page * page, to = end / page * page;
    if (from < to) ::madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);
    return;
  }
}

std::vector<float> Checkpoint::to_float_released(const TensorView& tensor) const {
  std::vector<float> values = to_float(tensor);
  release_pages(tensor);
  return values;
}

Checkpoint Checkpoint::open(const std::filesystem::path& dir_or_file) {
  std::error_code error;
  if (!std::filesystem::is_directory(dir_or_file, error)) return open_file(dir_or_file);
  const auto single = dir_or_file / kSingleFileName;
  if (std::filesystem::exists(single, error)) return open_file(single);
  const auto index = dir_or_file / kShardIndexName;
  if (std::filesystem::exists(index, error)) return open_index(index);
  throw LoadError(dir_or_file.string() + ": contains neither " + std::string(kSingleFileName) +
                  " nor " + std::string(kShardIndexName));
}

Checkpoint Checkpoint::open_file(const std::filesystem::path& file) {
  MappedFile mapped = MappedFile::open(file);
  if (has_gguf_magic(mapped.bytes())) return open_gguf(file, std::move(mapped));
  std::vector<MappedFile> files;
  files.push_back(std::move(mapped));
  auto contents = parse_safetensors(files.back().bytes(), file.string());
  return Checkpoint(file, std::move(files), std::move(contents.tensors));
}

Checkpoint Checkpoint::open_gguf(const std::filesystem::path& file, MappedFile mapped) {
  auto parsed = std::make_shared<GgufFile>(parse_gguf(mapped.bytes(), file.string()));
  GgufWeights weights = map_gguf_weights(*parsed);
  std::vector<MappedFile> files;
  files.push_back(std::move(mapped));
  Checkpoint checkpoint(file, std::move(files), std::move(weights.tensors));
  checkpoint.owned_ = std::move(weights.owned);
  checkpoint.gguf_ = std::move(parsed);
  return checkpoint;
}

Checkpoint Checkpoint::open_index(const std::filesystem::path& index_file) {
  const auto weight_map = read_weight_map(index_file);
  const auto directory = index_file.parent_path();
  const auto index_label = index_file.string();

  // Each shard is mapped once, however many tensors the index sends to it.
  std::set<std::string> shards;
  for (const auto& [name, shard] : weight_map) shards.insert(shard);

  std::vector<MappedFile> files;
  std::vector<TensorView> tensors;
  std::map<std::string, std::string> found_in;  // tensor name → shard holding it
  for (const auto& shard : shards) {
    const auto shard_path = directory / shard;
    files.push_back(MappedFile::open(shard_path));
    auto contents = parse_safetensors(files.back().bytes(), shard_path.string());
    for (auto& tensor : contents.tensors) {
      const auto listed = weight_map.find(tensor.name);
      if (listed == weight_map.end()) {
        throw LoadError(index_label + ": tensor '" + tensor.name + "' is in shard " + shard +
                        " but not listed in the index");
      }
      const auto [previous, inserted] = found_in.emplace(tensor.name, shard);
      if (!inserted) {
        throw LoadError(index_label + ": tensor '" + tensor.name + "' is in two shards: " +
                        previous->second + " and " + shard);
      }
      if (listed->second != shard) {
        throw LoadError(index_label + ": tensor '" + tensor.name + "' is in shard " + shard +
                        " but the index places it in " + listed->second);
      }
      tensors.push_back(std::move(tensor));
    }
  }
  for (const auto& [name, shard] : weight_map) {
    if (!found_in.contains(name)) {
      throw LoadError(index_label + ": tensor '" + name + "' is listed in the index for shard " +
                      shard + " but missing from it");
    }
  }
  return Checkpoint(index_file, std::move(files), std::move(tensors));
}

const TensorView* Checkpoint::find(std::string_view name) const {
  const auto it = std::lower_bound(
      tensors_.begin(), tensors_.end(), name,
      [](const TensorView& tensor, std::string_view key) { return tensor.name < key; });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

const TensorView& Checkpoint::get(std::string_view name) const {
  const TensorView* tensor = find(name);
  if (tensor == nullptr) {
    throw LoadError(source_.string() + ": tensor '" + std::string(name) + "' not found");
  }
  return *tensor;
}

const TensorView& Checkpoint::get(std::string_view name,
                                  std::span<const int64_t> expected_shape) const {
  const TensorView& tensor = get(name);
  if (!std::ranges::equal(tensor.shape, expected_shape)) {
    throw LoadError(source_.string() + ": tensor '" + tensor.name + "' has shape " +
                    shape_to_string(tensor.shape) + ", expected " +
                    shape_to_string(expected_shape));
  }
  return tensor;
}

const TensorView& Checkpoint::get(std::string_view name,
                                  std::initializer_list<int64_t> expected_shape) const {
  return get(name, std::span<const int64_t>(expected_shape.begin(), expected_shape.size()));
}

std::vector<std::string_view> Checkpoint::names() const {
  std::vector<std::string_view> result;
  result.reserve(tensors_.size());
  for (const auto& tensor : tensors_) result.emplace_back(tensor.name);
  return result;
}

}  // namespace s1::checkpoint
