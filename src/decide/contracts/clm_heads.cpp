#include "decide/contracts/clm_heads.h"

#include <algorithm>
#include <set>
#include <string>

#include "backend/cpu/gelu.h"
#include "backend/cpu/layer_norm.h"
#include "decide/contracts/embedding_cache.h"
#include "model/checkpoint/checkpoint.h"
#include "model/checkpoint/load_error.h"

namespace s1::decide {
namespace {

constexpr float layer_norm_eps = 1e-5F;  // torch.nn.LayerNorm's default, as heads.py builds it

class HeadReader {
 public:
  HeadReader(const checkpoint::Checkpoint& file, std::string head) : file_(file), head_(std::move(head)) {}

  // The linear layer <head>.<name> whose input width is `in`; returns it and records its output width.
  backend::cpu::PackedLinear linear(const std::string& name, std::size_t in, backend::cpu::Activation activation,
                                    std::size_t& out) {
    const checkpoint::TensorView& weight = take(name + ".weight");
    if (weight.shape.size() != 2 || weight.shape[1] != static_cast<int64_t>(in) || weight.shape[0] <= 0) {
      throw checkpoint::LoadError(file_.source().string() + ": tensor '" + weight.name + "' has shape " +
                                  checkpoint::shape_to_string(weight.shape) + ", expected [N, " +
                                  std::to_string(in) + "]");
    }
    out = static_cast<std::size_t>(weight.shape[0]);
    const std::vector<float> bias = vector(name + ".bias", out);
    return backend::cpu::PackedLinear(checkpoint::to_float(weight), bias, in, out, backend::cpu::Precision::fp32,
                                      activation);
  }

  std::vector<float> vector(const std::string& name, std::size_t size) {
    const int64_t shape[] = {static_cast<int64_t>(size)};
    return checkpoint::to_float(take(name, shape));
  }

  bool has(const std::string& name) const { return file_.find(head_ + "." + name) != nullptr; }
  const std::set<std::string>& used() const { return used_; }

 private:
  const checkpoint::TensorView& take(const std::string& name, std::span<const int64_t> shape = {}) {
    const std::string full = head_ + "." + name;
    used_.insert(full);
    return shape.empty() ? file_.get(full) : file_.get(full, shape);
  }

  const checkpoint::Checkpoint& file_;
  std::string head_;
  std::set<std::string> used_;
};

ClmHead read_head(const checkpoint::Checkpoint& file, const std::string& name, std::size_t input_size,
                  bool residual, std::set<std::string>& used) {
  HeadReader reader(file, name);
  std::size_t width = 0;
  backend::cpu::PackedLinear input = reader.linear("inp", input_size, backend::cpu::Activation::gelu, width);
  std::vector<ClmHead::Block> blocks;
  for (std::size_t i = 0; reader.has("hidden." + std::to_string(i) + ".weight"); ++i) {
    const std::string index = std::to_string(i);
    std::size_t block_out = 0;
    backend::cpu::PackedLinear linear =
        reader.linear("hidden." + index, width, backend::cpu::Activation::none, block_out);
    if (block_out != width) {
      throw checkpoint::LoadError(file.source().string() + ": tensor '" + name + ".hidden." + index +
                                  ".weight' maps " + std::to_string(width) + " to " + std::to_string(block_out) +
                                  "; hidden blocks keep the head's width");
    }
    ClmHead::Block block{std::move(linear), {}, {}};
    if (reader.has("norms." + index + ".weight")) {
      block.norm_weight = reader.vector("norms." + index + ".weight", width);
      block.norm_bias = reader.vector("norms." + index + ".bias", width);
    }
    blocks.push_back(std::move(block));
  }
  std::size_t projection = 0;
  backend::cpu::PackedLinear output = reader.linear("out", width, backend::cpu::Activation::none, projection);
  used.insert(reader.used().begin(), reader.used().end());
  return ClmHead(std::move(input), std::move(blocks), std::move(output), residual);
}

}  // namespace

ClmHead::ClmHead(backend::cpu::PackedLinear input, std::vector<Block> blocks, backend::cpu::PackedLinear output,
                 bool residual)
    : input_(std::move(input)), blocks_(std::move(blocks)), output_(std::move(output)), residual_(residual) {}

std::vector<float> ClmHead::project(std::span<const float> rows) const {
  const std::size_t width = input_.out_features();
  const std::size_t count = rows.size() / input_.in_features();
  std::vector<float> x(count * width);
  input_.forward(rows, x);
  std::vector<float> h(x.size());
  for (const Block& block : blocks_) {
    block.linear.forward(x, h);
    if (!block.norm_weight.empty()) backend::cpu::layer_norm(h, block.norm_weight, block.norm_bias, layer_norm_eps, h);
    backend::cpu::gelu(h, h);
    if (residual_) {
      for (std::size_t i = 0; i < x.size(); ++i) x[i] += h[i];
    } else {
      std::swap(x, h);
    }
  }
  std::vector<float> projected(count * output_.out_features());
  output_.forward(x, projected);
  l2_normalize_rows(projected, output_.out_features());
  return projected;
}

ClmHeads load_clm_heads(const std::filesystem::path& file, std::size_t input_size, bool residual) {
  const checkpoint::Checkpoint heads = checkpoint::Checkpoint::open(file);
  std::set<std::string> used;
  ClmHeads loaded{read_head(heads, "state_head", input_size, residual, used),
                  read_head(heads, "action_head", input_size, residual, used)};
  if (loaded.state.output_size() != loaded.action.output_size()) {
    throw checkpoint::LoadError(file.string() + ": the state head projects to " +
                                std::to_string(loaded.state.output_size()) + " values and the action head to " +
                                std::to_string(loaded.action.output_size()) + "; the cosine needs one size");
  }
  for (const std::string_view name : heads.names()) {
    if (!used.contains(std::string(name))) {
      throw checkpoint::LoadError(file.string() + ": unexpected tensor '" + std::string(name) +
                                  "' (a CLM heads file holds state_head.* and action_head.* inp, hidden.N, "
                                  "norms.N and out tensors only)");
    }
  }
  return loaded;
}

}  // namespace s1::decide
