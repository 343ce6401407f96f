#pragma once
// From llama.cpp's GGUF names onto the Hugging Face names our safetensors loaders read, for the
// architectures s1serve has a family for. convert_hf_to_gguf.py renames every tensor (through the
// gguf package's TensorNameMap) and, for some architectures, also changes its values or shape;
// each mapping says which of those changes loading must undo.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace s1::checkpoint {

// What the converter did besides renaming (bit flags; a tensor can carry several).
enum GgufTransform : uint32_t {
  kGgufAsIs = 0,
  // A [C, 1, K] depthwise conv kernel stored squeezed to [C, K] (ggml's conv op wants 2-D).
  kGgufUnsqueezeConv = 1u << 0,
  // Qwen3.5's (1 + w) RMSNorm weights stored as 1 + w, so that llama.cpp multiplies plainly.
  kGgufMinusOne = 1u << 1,
  // Qwen3.5's A_log stored as A = -exp(A_log).
  kGgufLogOfNegated = 1u << 2,
  // Qwen3.5 with fewer key than value heads in its linear attention: the value heads, grouped by
  // key head in Transformers' layout, stored tiled (llama.cpp broadcasts instead of repeating).
  // Which part of the tensor holds value heads, and along which axis:
  kGgufTiledValueRows = 1u << 3,     // every row (in_proj_z; in_proj_a/b, A_log, dt_bias per head)
  kGgufTiledValueColumns = 1u << 4,  // every column (out_proj)
  kGgufTiledValueTail = 1u << 5,     // rows after the q and k rows (in_proj_qkv, conv1d)
};

struct GgufTensorMapping {
  std::string name;  // as our safetensors loaders read it
  uint32_t transforms = kGgufAsIs;
  // For the kGgufTiledValue* transforms: one row per value head (in_proj_a/b, A_log, dt_bias)
  // rather than one per value-head channel.
  bool per_head = false;
};

// The general.architecture values s1serve maps: "qwen3", "qwen35", "lfm2", "bert", "modern-bert".
std::span<const std::string_view> gguf_architectures();
bool is_mapped_gguf_architecture(std::string_view architecture);

// nullopt for a name the architecture's table does not hold (the caller reports it, naming the
// tensor: an unknown tensor may be one our family would need to handle).
std::optional<GgufTensorMapping> map_gguf_tensor(std::string_view architecture, std::string_view gguf_name);

// The other way, for a writer: the GGUF name of our tensor `name` when the architecture's table
// stores it renamed only (no value change; a kGgufUnsqueezeConv kernel, which the writer squeezes,
// included); nullopt otherwise.
std::optional<std::string> gguf_tensor_name(std::string_view architecture, std::string_view name);

}  // namespace s1::checkpoint
