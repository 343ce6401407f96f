#include "model/heads/clm_head.h"

#include <set>
#include <string>
#include <utility>

#include "model/checkpoint/checkpoint.h"
#include "model/checkpoint/load_error.h"
#include "model/common/checkpoint_tensors.h"
#include "model/heads/layer_norm.h"
#include "model/heads/unit_rows.h"

namespace s1::heads {
namespace {

constexpr float layer_norm_eps = 1e-5F;  // torch.nn.LayerNorm's default, as heads.py builds it

class HeadReader {
 public:
  HeadReader(const checkpoint::Checkpoint& file, std::string head, backend::Backend& backend)
      : file_(file), head_(std::move(head)), backend_(backend) {}

  // The linear layer <head>.<name> whose input width is `in`, packed in fp32 (the heads' arithmetic).
  std::unique_ptr<backend::PackedMatrix> linear(const std::string& name, std::size_t in,
                                                backend::Activation activation) {
    const checkpoint::TensorView& weight = take(name + ".weight");
    if (weight.shape.size() != 2 || weight.shape[1] != static_cast<int64_t>(in) || weight.shape[0] <= 0) {
      throw checkpoint::LoadError(file_.source().string() + ": tensor '" + weight.name + "' has shape " +
                                  checkpoint::shape_to_string(weight.shape) + ", expected [N, " + std::to_string(in) +
                                  "]");
    }
    const backend::Tensor bias = vector(name + ".bias", static_cast<std::size_t>(weight.shape[0]));
    return backend_.pack_matmul(model::checkpoint_tensor(weight), bias, backend::Arithmetic::fp32, activation);
  }

  backend::Tensor vector(const std::string& name, std::size_t size) {
    const int64_t shape[] = {static_cast<int64_t>(size)};
    return model::fp32_tensor(take(name, shape));
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
  backend::Backend& backend_;
  std::set<std::string> used_;
};

ClmHead read_head(const checkpoint::Checkpoint& file, const std::string& name, std::size_t input_size, bool residual,
                  std::set<std::string>& used, backend::Backend& backend) {
  HeadReader reader(file, name, backend);
  auto input = reader.linear("inp", input_size, backend::Activation::gelu);
  const std::size_t width = input->out_features();
  std::vector<ClmHead::Block> blocks;
  for (std::size_t i = 0; reader.has("hidden." + std::to_string(i) + ".weight"); ++i) {
    const std::string index = std::to_string(i);
    ClmHead::Block block{reader.linear("hidden." + index, width, backend::Activation::none), {}, {}};
    if (block.linear->out_features() != width) {
      throw checkpoint::LoadError(file.source().string() + ": tensor '" + name + ".hidden." + index + ".weight' maps " +
                                  std::to_string(width) + " to " + std::to_string(block.linear->out_features()) +
                                  "; hidden blocks keep the head's width");
    }
    if (reader.has("norms." + index + ".weight")) {
      block.norm_weight = reader.vector("norms." + index + ".weight", width);
      block.norm_bias = reader.vector("norms." + index + ".bias", width);
    }
    blocks.push_back(std::move(block));
  }
  auto output = reader.linear("out", width, backend::Activation::none);
  used.insert(reader.used().begin(), reader.used().end());
  return ClmHead(backend, std::move(input), std::move(blocks), std::move(output), residual);
}

}  // namespace

ClmHead::ClmHead(backend::Backend& backend, std::unique_ptr<backend::PackedMatrix> input, std::vector<Block> blocks,
                 std::unique_ptr<backend::PackedMatrix> output, bool residual)
    : backend_(&backend),
      input_(std::move(input)),
      blocks_(std::move(blocks)),
      output_(std::move(output)),
      residual_(residual) {}

std::vector<float> ClmHead::project(std::span<const float> rows) const {
  const std::size_t width = input_->out_features();
  const std::size_t count = rows.size() / input_size();
  const std::size_t hidden_shape[] = {count, width};
  const backend::Tensor x = backend_->allocate(backend::DType::fp32, hidden_shape);
  const backend::Tensor h = backend_->allocate(backend::DType::fp32, hidden_shape);
  backend_->matmul(
      {.x = backend_->upload(backend::Tensor::of(rows, {count, input_size()})), .weight = input_.get(), .y = x});
  for (const Block& block : blocks_) {
    backend_->matmul({.x = x, .weight = block.linear.get(), .y = h});
    if (block.norm_weight.defined()) {
      layer_norm(*backend_, h, block.norm_weight, block.norm_bias, layer_norm_eps, h);
    }
    backend_->activate(backend::Activation::gelu, h, h);
    // A residual block adds its GELU to x; a plain one replaces x (h's values become x's).
    const std::span<float> into = x.values<float>();
    const std::span<const float> from = h.read_values<float>();
    for (std::size_t i = 0; i < into.size(); ++i) into[i] = residual_ ? into[i] + from[i] : from[i];
  }
  const std::size_t projected_shape[] = {count, output_->out_features()};
  const backend::Tensor projected = backend_->allocate(backend::DType::fp32, projected_shape);
  backend_->matmul({.x = x, .weight = output_.get(), .y = projected});
  std::vector<float> result(projected.read_values<float>().begin(), projected.read_values<float>().end());
  l2_normalize_rows(result, output_->out_features());
  return result;
}

ClmHeads load_clm_heads(const std::filesystem::path& file, std::size_t input_size, bool residual,
                        backend::Backend& backend) {
  const checkpoint::Checkpoint heads = checkpoint::Checkpoint::open(file);
  std::set<std::string> used;
  ClmHeads loaded{read_head(heads, "state_head", input_size, residual, used, backend),
                  read_head(heads, "action_head", input_size, residual, used, backend)};
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

}  // namespace s1::heads
