#include "model/qwen3_5_vision/vision_tower.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "model/checkpoint/load_error.h"
#include "model/common/checkpoint_tensors.h"

namespace s1::qwen3_5_vision {
namespace {

using backend::Activation;
using backend::DType;
using backend::Tensor;

constexpr float layer_norm_eps = 1e-6F;

std::size_t size(int64_t value) { return static_cast<std::size_t>(value); }

Tensor vector(const checkpoint::Checkpoint& weights, const std::string& name, int64_t length) {
  return model::fp32_tensor(weights.get(name, {length}));
}

std::unique_ptr<backend::PackedMatrix> linear(backend::Backend& backend, const checkpoint::Checkpoint& weights,
                                              const std::string& name, int64_t in, int64_t out,
                                              backend::Arithmetic arithmetic,
                                              Activation activation = Activation::none) {
  return backend.pack_matmul(model::checkpoint_tensor(weights.get(name + ".weight", {out, in})),
                             vector(weights, name + ".bias", out), arithmetic, activation);
}

// The qkv projection with each query and key head's values reordered from [h₁ w₁ h₂ w₂] to
// [h₁ h₂ w₁ w₂] (quarters of the head). Transformers' axial rotary pairs value j with j + d/2 and
// rotates the first d/4 pairs by the patch's row, the next d/4 by its column; after the reorder each
// half-head holds one axis's pairs at distance d/4, which is plain rotate-half RoPE over d/2 values
// (the same inverse frequencies), one RopeCall per axis. Queries and keys move alike, so every
// score q·k is unchanged, and values are left as they are.
std::unique_ptr<backend::PackedMatrix> axial_qkv(backend::Backend& backend, const checkpoint::Checkpoint& weights,
                                                 const std::string& name, const VisionConfig& config,
                                                 backend::Arithmetic arithmetic) {
  const int64_t hidden = config.hidden_size, d = config.head_dim();
  const std::vector<float> w = checkpoint::to_float(weights.get(name + ".weight", {3 * hidden, hidden}));
  const std::vector<float> b = checkpoint::to_float(weights.get(name + ".bias", {3 * hidden}));
  std::vector<float> reordered_w(w.size()), reordered_b(b.size());
  const int64_t quarter = d / 4;
  for (int64_t row = 0; row < 3 * hidden; ++row) {
    int64_t source = row;
    if (row < 2 * hidden) {
      const int64_t head_start = row - row % d, j = row % d;
      const int64_t piece = j / quarter, offset = j % quarter;
      static constexpr int64_t from_piece[] = {0, 2, 1, 3};
      source = head_start + from_piece[piece] * quarter + offset;
    }
    std::copy_n(&w[size(source * hidden)], size(hidden), &reordered_w[size(row * hidden)]);
    reordered_b[size(row)] = b[size(source)];
  }
  return backend.pack_matmul(Tensor::of(std::span<const float>(reordered_w)).reshape({size(3 * hidden), size(hidden)}),
                             Tensor::of(std::span<const float>(reordered_b)), arithmetic, Activation::none);
}

// Per patch (in merge-window order), its row and column on its image's grid.
struct PatchPlace {
  std::vector<int64_t> rows, columns;
};

PatchPlace patch_places(std::span<const Grid> grids, int64_t merge) {
  PatchPlace places;
  for (const Grid& grid : grids) {
    for (int64_t frame = 0; frame < grid.t; ++frame) {
      for (int64_t block_row = 0; block_row < grid.h / merge; ++block_row) {
        for (int64_t block_col = 0; block_col < grid.w / merge; ++block_col) {
          for (int64_t in_row = 0; in_row < merge; ++in_row) {
            for (int64_t in_col = 0; in_col < merge; ++in_col) {
              places.rows.push_back(block_row * merge + in_row);
              places.columns.push_back(block_col * merge + in_col);
            }
          }
        }
      }
    }
  }
  return places;
}

// Transformers' align-corners bilinear taps on one axis, in its fp32 arithmetic: source position
// index·(side − 1)/max(size − 1, 1), taps floor and floor + 1 clamped to the table, weights 1 − |Δ|.
struct AxisTaps {
  int64_t first = 0, second = 0;
  float first_weight = 0.0F, second_weight = 0.0F;
};

AxisTaps axis_taps(int64_t index, int64_t length, int64_t side) {
  const float source =
      static_cast<float>(index) * static_cast<float>(side - 1) / static_cast<float>(std::max<int64_t>(length - 1, 1));
  const float floor = std::floor(source);
  const auto base = static_cast<int64_t>(floor);
  const auto weight = [&](int64_t offset) {
    return std::max(1.0F - std::fabs(source - floor - static_cast<float>(offset)), 0.0F);
  };
  return {std::clamp<int64_t>(base, 0, side - 1), std::clamp<int64_t>(base + 1, 0, side - 1), weight(0), weight(1)};
}

}  // namespace

VisionTower VisionTower::load(const std::filesystem::path& dir, backend::Backend& backend,
                              backend::Arithmetic arithmetic, const decoder::LoraAdapter* lora) {
  const VisionConfig config = read_vision_config(dir / "config.json");
  const checkpoint::Checkpoint weights = checkpoint::Checkpoint::open(dir);
  return {config, weights, "model.visual.", backend, arithmetic, lora};
}

void VisionTower::Linear::apply(backend::Backend& be, const Tensor& x, bool accumulate, const Tensor& y) const {
  be.matmul({.x = x, .weight = base.get(), .accumulate = accumulate, .y = y});
  if (!down) return;
  // The low-rank term joins before the activation, so an adapted base runs without its epilogue.
  const std::array<std::size_t, 2> low_shape{x.rows(), down->out_features()};
  const Tensor low = be.allocate(DType::fp32, low_shape);
  be.matmul({.x = x, .weight = down.get(), .y = low});
  be.matmul({.x = low, .weight = up.get(), .accumulate = true, .y = y});
  if (activation != Activation::none) be.activate(activation, y, y);
}

VisionTower::VisionTower(const VisionConfig& config, const checkpoint::Checkpoint& weights, std::string_view prefix,
                         backend::Backend& backend, backend::Arithmetic arithmetic, const decoder::LoraAdapter* lora)
    : config_(config), backend_(&backend) {
  const std::string p(prefix);
  // A linear with its adapter pair when `lora` adapts it (activation then applied after the sum).
  const auto adapted = [&](const std::string& name, int64_t in, int64_t out, Activation activation) {
    const decoder::LoraAdapter::Pair* pair = lora != nullptr ? lora->take(name + ".weight") : nullptr;
    Linear l{.base = linear(backend, weights, name, in, out, arithmetic, pair != nullptr ? Activation::none : activation),
             .down = nullptr,
             .up = nullptr,
             .activation = pair != nullptr ? activation : Activation::none};
    if (pair == nullptr) return l;
    if (pair->in_features != size(in) || pair->out_features != size(out)) {
      throw checkpoint::LoadError(weights.source().string() + ": the LoRA pair of '" + name + "' is " +
                                  std::to_string(pair->out_features) + "x" + std::to_string(pair->in_features) +
                                  ", the weight " + std::to_string(out) + "x" + std::to_string(in));
    }
    std::vector<float> scaled_b = pair->b;
    for (float& v : scaled_b) v = static_cast<float>(v * lora->scale());
    l.down = backend.pack_matmul(Tensor::of(std::span<const float>(pair->a)).reshape({pair->rank, size(in)}), Tensor{},
                                 backend::Arithmetic::fp32, Activation::none);
    l.up = backend.pack_matmul(Tensor::of(std::span<const float>(scaled_b)).reshape({size(out), pair->rank}), Tensor{},
                               backend::Arithmetic::fp32, Activation::none);
    return l;
  };
  if (lora != nullptr) {
    // Only the MLP linears take an adapter; any other tower weight's pair would be dropped.
    for (const std::string other : {"attn.qkv", "attn.proj"}) {
      for (int64_t i = 0; i < config.depth; ++i) {
        const std::string name = p + "blocks." + std::to_string(i) + "." + other + ".weight";
        if (lora->take(name) != nullptr) {
          throw checkpoint::LoadError(weights.source().string() + ": LoRA on '" + name + "' is not supported");
        }
      }
    }
    if (lora->take(p + "patch_embed.proj.weight") != nullptr) {
      throw checkpoint::LoadError(weights.source().string() + ": LoRA on the patch embedding is not supported");
    }
  }
  const int64_t hidden = config.hidden_size, merged = hidden * config.spatial_merge_size * config.spatial_merge_size;
  const int64_t patch = config.patch_size;
  // Conv3d weight [hidden, C, T, P, P] is the matmul weight [hidden, C·T·P·P] over the processor's
  // (C, T, py, px) patch values.
  const std::vector<float> conv = checkpoint::to_float(weights.get(
      p + "patch_embed.proj.weight", {hidden, config.in_channels, config.temporal_patch_size, patch, patch}));
  patch_embed_ =
      backend.pack_matmul(Tensor::of(std::span<const float>(conv)).reshape({size(hidden), size(config.patch_values())}),
                          vector(weights, p + "patch_embed.proj.bias", hidden), arithmetic, Activation::none);
  // Owned: the checkpoint's mapping may close after loading.
  position_table_ =
      backend.upload(model::fp32_tensor(weights.get(p + "pos_embed.weight", {config.num_position_embeddings, hidden})));
  const Activation mlp_activation = config.tanh_gelu ? Activation::gelu_tanh : Activation::gelu;
  for (int64_t i = 0; i < config.depth; ++i) {
    const std::string b = p + "blocks." + std::to_string(i) + ".";
    blocks_.push_back(Block{
        .norm1_weight = vector(weights, b + "norm1.weight", hidden),
        .norm1_bias = vector(weights, b + "norm1.bias", hidden),
        .norm2_weight = vector(weights, b + "norm2.weight", hidden),
        .norm2_bias = vector(weights, b + "norm2.bias", hidden),
        .qkv = axial_qkv(backend, weights, b + "attn.qkv", config, arithmetic),
        .proj = linear(backend, weights, b + "attn.proj", hidden, hidden, arithmetic),
        .fc1 = adapted(b + "mlp.linear_fc1", hidden, config.intermediate_size, mlp_activation),
        .fc2 = adapted(b + "mlp.linear_fc2", config.intermediate_size, hidden, Activation::none),
    });
  }
  merger_norm_weight_ = vector(weights, p + "merger.norm.weight", hidden);
  merger_norm_bias_ = vector(weights, p + "merger.norm.bias", hidden);
  // The merger's GELU is nn.GELU(): exact.
  merger_fc1_ = adapted(p + "merger.linear_fc1", merged, merged, Activation::gelu);
  merger_fc2_ = adapted(p + "merger.linear_fc2", merged, config.out_hidden_size, Activation::none);
}

Tensor VisionTower::forward(const Tensor& pixel_values, std::span<const Grid> grids) const {
  backend::Backend& be = *backend_;
  const int64_t merge = config_.spatial_merge_size, hidden = config_.hidden_size, d = config_.head_dim();
  const int64_t heads = config_.num_heads;
  int64_t patches = 0;
  for (const Grid& grid : grids) {
    if (grid.t < 1 || grid.h < 1 || grid.w < 1 || grid.h % merge != 0 || grid.w % merge != 0) {
      throw std::invalid_argument("vision tower: grid " + std::to_string(grid.t) + "x" + std::to_string(grid.h) + "x" +
                                  std::to_string(grid.w) + " is not whole merge windows of " + std::to_string(merge));
    }
    patches += grid.t * grid.h * grid.w;
  }
  if (pixel_values.dtype() != DType::fp32 || pixel_values.rows() != size(patches) ||
      pixel_values.row_size() != size(config_.patch_values())) {
    throw std::invalid_argument("vision tower: pixel_values must be [" + std::to_string(patches) + ", " +
                                std::to_string(config_.patch_values()) + "] fp32");
  }
  const std::size_t n = size(patches), width = size(hidden);
  const auto allocate = [&](std::size_t rows, std::size_t columns) {
    const std::size_t shape[] = {rows, columns};
    return be.allocate(DType::fp32, shape);
  };

  // Positions: the learned grid interpolated to each image's grid (4 taps per patch), and each
  // patch's row and column for the rotary.
  const PatchPlace places = patch_places(grids, merge);
  const auto side = static_cast<int64_t>(std::sqrt(static_cast<double>(config_.num_position_embeddings)));
  std::vector<std::int32_t> tap_ids;
  std::vector<float> tap_weights;
  std::size_t patch_index = 0;
  for (const Grid& grid : grids) {
    for (int64_t i = 0; i < grid.t * grid.h * grid.w; ++i, ++patch_index) {
      const AxisTaps r = axis_taps(places.rows[patch_index], grid.h, side);
      const AxisTaps c = axis_taps(places.columns[patch_index], grid.w, side);
      for (const auto& [row, row_weight] : {std::pair{r.first, r.first_weight}, {r.second, r.second_weight}}) {
        for (const auto& [col, col_weight] : {std::pair{c.first, c.first_weight}, {c.second, c.second_weight}}) {
          tap_ids.push_back(static_cast<std::int32_t>(row * side + col));
          tap_weights.push_back(row_weight * col_weight);
        }
      }
    }
  }
  Tensor x = allocate(n, width);
  be.embedding_bag(position_table_, be.upload(Tensor::of(std::span<const std::int32_t>(tap_ids)).reshape({n, 4})),
                   be.upload(Tensor::of(std::span<const float>(tap_weights)).reshape({n, 4})), x);
  be.matmul({.x = be.upload(pixel_values), .weight = patch_embed_.get(), .accumulate = true, .y = x});

  const Tensor row_positions = be.upload(Tensor::of(std::span<const std::int64_t>(places.rows)));
  const Tensor column_positions = be.upload(Tensor::of(std::span<const std::int64_t>(places.columns)));
  // Attention runs within each frame of each image (Transformers' cu_seqlens).
  std::vector<backend::AttentionSegment> segments;
  std::size_t offset = 0;
  for (const Grid& grid : grids) {
    for (int64_t frame = 0; frame < grid.t; ++frame) {
      segments.push_back({.offset = offset, .length = size(grid.h * grid.w)});
      offset += size(grid.h * grid.w);
    }
  }

  Tensor normed = allocate(n, width), qkv = allocate(n, 3 * width), attended = allocate(n, width);
  Tensor mlp = allocate(n, size(config_.intermediate_size));
  const std::size_t q_width = size(heads * d);
  for (const Block& block : blocks_) {
    be.norm({.kind = backend::NormCall::Kind::layer,
             .x = x,
             .weight = block.norm1_weight,
             .bias = block.norm1_bias,
             .eps = layer_norm_eps,
             .y = normed});
    be.matmul({.x = normed, .weight = block.qkv.get(), .y = qkv});
    // Rows on the first half of each (reordered) query and key head, columns on the second: the
    // second view starts half a head in, so its last head's unrotated half lies past the queries
    // (in the keys, or the values), where a partial rotary does not write.
    for (const std::size_t start : {std::size_t{0}, q_width}) {
      for (const auto& [shift, positions] :
           {std::pair{std::size_t{0}, row_positions}, {size(d / 2), column_positions}}) {
        be.rope({.x = qkv.slice_columns(start + shift, q_width),
                 .heads = size(heads),
                 .head_dim = size(d),
                 .rotary_dim = size(d / 2),
                 .theta = static_cast<float>(config_.rope_theta),
                 .positions = positions});
      }
    }
    be.attention({.q = qkv.slice_columns(0, q_width),
                  .k = qkv.slice_columns(q_width, q_width),
                  .v = qkv.slice_columns(2 * q_width, q_width),
                  .segments = segments,
                  .heads = size(heads),
                  .kv_heads = size(heads),
                  .head_dim = size(d),
                  .causal = false,
                  .scale = 1.0F / std::sqrt(static_cast<float>(d)),
                  .out = attended});
    be.matmul({.x = attended, .weight = block.proj.get(), .accumulate = true, .y = x});
    be.norm({.kind = backend::NormCall::Kind::layer,
             .x = x,
             .weight = block.norm2_weight,
             .bias = block.norm2_bias,
             .eps = layer_norm_eps,
             .y = normed});
    block.fc1.apply(be, normed, false, mlp);
    block.fc2.apply(be, mlp, true, x);
  }

  // The merger: LayerNorm per patch, then each merge window's patches side by side as one row.
  be.norm({.kind = backend::NormCall::Kind::layer,
           .x = x,
           .weight = merger_norm_weight_,
           .bias = merger_norm_bias_,
           .eps = layer_norm_eps,
           .y = normed});
  const std::size_t windows = n / size(merge * merge), merged = width * size(merge * merge);
  Tensor merged_hidden = allocate(windows, merged);
  merger_fc1_.apply(be, normed.reshape({windows, merged}), false, merged_hidden);
  Tensor features = allocate(windows, size(config_.out_hidden_size));
  merger_fc2_.apply(be, merged_hidden, false, features);
  return features;
}

}  // namespace s1::qwen3_5_vision
