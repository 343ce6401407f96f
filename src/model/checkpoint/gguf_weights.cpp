#include "model/checkpoint/gguf_weights.h"

#include <cmath>
#include <set>
#include <string>

#include "model/checkpoint/gguf_dequant.h"
#include "model/checkpoint/gguf_names.h"
#include "model/checkpoint/load_error.h"

namespace s1::checkpoint {
namespace {

constexpr uint32_t kTiledValues = kGgufTiledValueRows | kGgufTiledValueColumns | kGgufTiledValueTail;

// Qwen3.5's linear-attention head counts, from the keys convert_hf_to_gguf.py writes.
struct HeadLayout {
  int64_t key_heads = 0;
  int64_t value_heads = 0;
  int64_t key_head_dim = 0;
  int64_t value_head_dim = 0;
};

HeadLayout read_head_layout(const GgufFile& file, const std::string& architecture) {
  const auto read = [&](const char* suffix) {
    const std::string key = architecture + suffix;
    const auto value = file.require(file.get_uint(key), key);
    if (value == 0 || value > (uint64_t{1} << 20)) file.fail_key(key, "is " + std::to_string(value) + ", out of range");
    return static_cast<int64_t>(value);
  };
  HeadLayout layout;
  layout.key_heads = read(".ssm.group_count");
  layout.value_heads = read(".ssm.time_step_rank");
  layout.key_head_dim = read(".ssm.state_size");
  const int64_t inner = read(".ssm.inner_size");
  if (layout.value_heads % layout.key_heads != 0 || inner % layout.value_heads != 0) {
    file.fail_key(architecture + ".ssm.time_step_rank",
                  "(value heads) must be a multiple of ssm.group_count (key heads) and divide ssm.inner_size");
  }
  layout.value_head_dim = inner / layout.value_heads;
  return layout;
}

// Undoes _LinearAttentionVReorderBase._reorder_v_heads on `count` consecutive slices of `stride`
// values along one axis, starting at slice `first`: the converter stored the slice of value head
// j of key group k at (j * key_heads + k), Transformers keeps it at (k * per_key + j).
void untile(std::vector<float>& values, int64_t rows, int64_t columns, bool along_columns, int64_t first,
            const HeadLayout& layout, int64_t head_dim) {
  const int64_t per_key = layout.value_heads / layout.key_heads;
  const std::vector<float> stored = values;
  for (int64_t k = 0; k < layout.key_heads; ++k) {
    for (int64_t j = 0; j < per_key; ++j) {
      for (int64_t d = 0; d < head_dim; ++d) {
        const int64_t ours = first + (k * per_key + j) * head_dim + d;
        const int64_t theirs = first + (j * layout.key_heads + k) * head_dim + d;
        if (along_columns) {
          for (int64_t r = 0; r < rows; ++r) values[r * columns + ours] = stored[r * columns + theirs];
        } else {
          for (int64_t c = 0; c < columns; ++c) values[ours * columns + c] = stored[theirs * columns + c];
        }
      }
    }
  }
}

class WeightMapper {
 public:
  explicit WeightMapper(const GgufFile& file) : file_(file) {
    architecture_ = file.require(file.get_string("general.architecture"), "general.architecture");
    if (!is_mapped_gguf_architecture(architecture_)) {
      std::string known;
      for (auto name : gguf_architectures()) known += (known.empty() ? "" : ", ") + std::string(name);
      file.fail_key("general.architecture", "is '" + architecture_ + "'; s1serve maps " + known);
    }
  }

  GgufWeights map() {
    GgufWeights weights;
    std::set<std::string> seen;
    for (const GgufTensor& tensor : file_.tensors) {
      auto mapping = map_gguf_tensor(architecture_, tensor.name);
      if (!mapping) fail(tensor, "is not a tensor of a '" + architecture_ + "' model that s1serve maps");
      if (!seen.insert(mapping->name).second) fail(tensor, "maps onto '" + mapping->name + "' twice");
      weights.tensors.push_back(convert(tensor, *mapping, weights.owned));
    }
    return weights;
  }

 private:
  [[noreturn]] void fail(const GgufTensor& tensor, const std::string& message) const {
    throw LoadError(file_.label + ": tensor '" + tensor.name + "' " + message);
  }

  TensorView convert(const GgufTensor& tensor, const GgufTensorMapping& mapping,
                     std::vector<std::vector<float>>& owned) {
    std::vector<int64_t> shape = tensor.shape();
    if (mapping.transforms & kGgufUnsqueezeConv) {
      if (shape.size() != 2) fail(tensor, "is a conv kernel of shape " + shape_to_string(shape) + ", expected 2-D");
      shape = {shape[0], 1, shape[1]};
    }
    const bool changes_values = (mapping.transforms & ~uint32_t{kGgufUnsqueezeConv}) != 0;
    const bool float_type =
        tensor.type == GgmlType::kF32 || tensor.type == GgmlType::kF16 || tensor.type == GgmlType::kBF16;
    // Q8_0 and Q4_K matrices stay quantised in the file: matmuls read their blocks as they are.
    const bool kept_quantized = (tensor.type == GgmlType::kQ8_0 || tensor.type == GgmlType::kQ4_K) && shape.size() == 2;
    if (kept_quantized && !changes_values) {
      return TensorView{.name = mapping.name,
                        .dtype = tensor.type == GgmlType::kQ8_0 ? DType::kQ8_0 : DType::kQ4_K,
                        .shape = std::move(shape),
                        .bytes = tensor.bytes};
    }
    if (float_type && !changes_values) {
      const DType dtype = tensor.type == GgmlType::kF32   ? DType::kF32
                          : tensor.type == GgmlType::kF16 ? DType::kF16
                                                          : DType::kBF16;
      return TensorView{.name = mapping.name, .dtype = dtype, .shape = std::move(shape), .bytes = tensor.bytes};
    }
    std::vector<float> values = dequantize(tensor);
    if (mapping.transforms & kGgufMinusOne) {
      for (float& value : values) value -= 1.0f;
    }
    if (mapping.transforms & kGgufLogOfNegated) {
      for (float& value : values) {
        if (!(value < 0.0f)) fail(tensor, "holds " + std::to_string(value) + " where -exp(A_log) must be negative");
        value = std::log(-value);
      }
    }
    if (mapping.transforms & kTiledValues) untile_values(tensor, mapping, values);
    owned.push_back(std::move(values));
    const auto& buffer = owned.back();
    return TensorView{.name = mapping.name,
                      .dtype = DType::kF32,
                      .shape = std::move(shape),
                      .bytes = std::as_bytes(std::span<const float>(buffer))};
  }

  void untile_values(const GgufTensor& tensor, const GgufTensorMapping& mapping, std::vector<float>& values) {
    if (!layout_) layout_ = read_head_layout(file_, architecture_);
    // The converter reorders only when the counts differ.
    if (layout_->key_heads == layout_->value_heads) return;
    const std::vector<int64_t> shape = tensor.shape();
    const int64_t rows = shape.empty() ? 1 : shape[0];
    const int64_t columns = shape.size() < 2 ? 1 : rows == 0 ? 0 : tensor.element_count() / rows;
    const int64_t head_dim = mapping.per_head ? 1 : layout_->value_head_dim;
    const int64_t value_span = layout_->value_heads * head_dim;
    const auto expect = [&](int64_t actual, int64_t expected, const char* what) {
      if (actual != expected) {
        fail(tensor, "has " + std::to_string(actual) + " " + what + ", expected " + std::to_string(expected) +
                         " from the ssm head counts");
      }
    };
    if (mapping.transforms & kGgufTiledValueColumns) {
      expect(columns, value_span, "columns");
      untile(values, rows, columns, true, 0, *layout_, head_dim);
    } else if (mapping.transforms & kGgufTiledValueTail) {
      const int64_t qk_rows = 2 * layout_->key_heads * layout_->key_head_dim;
      expect(rows, qk_rows + value_span, "rows");
      untile(values, rows, columns, false, qk_rows, *layout_, head_dim);
    } else {
      expect(rows, value_span, "rows");
      untile(values, rows, columns, false, 0, *layout_, head_dim);
    }
  }

  const GgufFile& file_;
  std::string architecture_;
  std::optional<HeadLayout> layout_;
};

}  // namespace

GgufWeights map_gguf_weights(const GgufFile& file) { return WeightMapper(file).map(); }

}  // namespace s1::checkpoint
