#include "model/heads/laya_head.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>

#include "model/checkpoint/config_reader.h"
#include "model/checkpoint/load_error.h"
#include "model/common/checkpoint_tensors.h"
#include "model/families.h"
#include "model/heads/layer_norm.h"

namespace s1::laya {
namespace {

using backend::DType;
using backend::Tensor;
using checkpoint::Checkpoint;
using checkpoint::LoadError;

// nn.TransformerEncoderLayer's and the scorer's LayerNorm (torch's default eps).
constexpr float head_norm_eps = 1e-5F;
// The act head's hidden width and extra features (laya's DecisionModel, fixed in code).
constexpr std::size_t act_hidden_width = 256;
constexpr std::size_t act_feature_count = 4;

[[noreturn]] void bad_member(const std::filesystem::path& file, std::string_view key, std::string_view problem) {
  throw LoadError(file.string() + ": '" + std::string(key) + "' " + std::string(problem));
}

int64_t positive_integer(const nlohmann::json& config, const std::filesystem::path& file, const std::string& key,
                         int64_t fallback, int64_t minimum) {
  const auto found = config.find(key);
  if (found == config.end()) return fallback;
  if (!found->is_number_integer() || found->get<int64_t>() < minimum) {
    bad_member(file, key, "must be an integer of at least " + std::to_string(minimum));
  }
  return found->get<int64_t>();
}

std::vector<float> get(const Checkpoint& weights, const std::string& name, std::initializer_list<int64_t> shape) {
  return checkpoint::to_float(weights.get(name, shape));
}

Tensor vector(const Checkpoint& weights, const std::string& name, int64_t size) {
  return model::fp32_tensor(weights.get(name, {size}));
}

Tensor row_indices(std::span<const std::size_t> rows) {
  Tensor indices = Tensor::empty(DType::i32, {rows.size()});
  std::ranges::transform(rows, indices.values<std::int32_t>().begin(),
                         [](std::size_t row) { return static_cast<std::int32_t>(row); });
  return indices;
}

std::unique_ptr<encoder::Encoder> load_encoder(const std::filesystem::path& dir, const Checkpoint& weights,
                                               backend::Arithmetic arithmetic) {
  checkpoint::ConfigReader config = checkpoint::ConfigReader::from_file(dir / "encoder" / "config.json");
  return model::read_encoder_config("modernbert", config)->load(weights, "encoder.", arithmetic);
}

}  // namespace

AgentConfig read_agent_config(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw LoadError(file.string() + ": cannot be read (a LAYA checkpoint ships rl_agent_config.json)");
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& error) {
    throw LoadError(file.string() + ": not valid JSON (" + error.what() + ")");
  }
  if (!config.is_object()) throw LoadError(file.string() + ": must be a JSON object");
  AgentConfig result;
  if (!config.contains("head_layers")) bad_member(file, "head_layers", "is missing (laya requires it)");
  result.head_layers = positive_integer(config, file, "head_layers", 2, 0);
  result.max_len = positive_integer(config, file, "max_len", 512, 16);
  result.head_max_len = positive_integer(config, file, "head_max_len", 192, 16);
  if (result.head_max_len >= result.max_len) bad_member(file, "head_max_len", "must be below max_len");
  if (const auto costs = config.find("act_costs"); costs != config.end()) {
    if (!costs->is_object()) bad_member(file, "act_costs", "must be an object");
    result.action_count = static_cast<int64_t>(costs->size()) + 1;
  } else {
    result.action_count = 1;
  }
  result.temperature = {1.0, 1.0, 1.0};
  if (const auto temperature = config.find("temperature"); temperature != config.end()) {
    if (!temperature->is_array() || temperature->size() != 3) {
      bad_member(file, "temperature", "must list three numbers (choice, score, noul)");
    }
    for (std::size_t i = 0; i < 3; ++i) {
      if (!(*temperature)[i].is_number()) bad_member(file, "temperature", "must list three numbers");
      result.temperature[i] = (*temperature)[i].get<double>();
    }
  }
  if (const auto buckets = config.find("temperature_by_options"); buckets != config.end()) {
    if (!buckets->is_object()) bad_member(file, "temperature_by_options", "must be an object of numbers");
    for (const auto& [key, value] : buckets->items()) {
      if (!value.is_number()) bad_member(file, "temperature_by_options." + key, "must be a number");
      result.temperature_by_options[key] = value.get<double>();
    }
  }
  return result;
}

LayaModel::LayaModel(const std::filesystem::path& dir, backend::Arithmetic arithmetic, backend::Backend& backend)
    : LayaModel(dir, arithmetic, backend, Checkpoint::open(dir / checkpoint::kSingleFileName)) {}

LayaModel::LayaModel(const std::filesystem::path& dir, backend::Arithmetic arithmetic, backend::Backend& backend,
                     const Checkpoint& weights)
    : backend_(&backend),
      arithmetic_(arithmetic),
      agent_config_(read_agent_config(dir / "rl_agent_config.json")),
      encoder_(load_encoder(dir, weights, arithmetic)),
      width_(encoder_->info().hidden_size) {
  if (!backend.supports(arithmetic)) {
    throw LoadError(weights.source().string() + ": bf16 needs a CPU with AVX-512 (AMX preferred); use fp32");
  }
  const auto d = static_cast<int64_t>(width_);
  if (std::cmp_greater(agent_config_.max_len, encoder_->info().max_positions)) {
    throw LoadError((dir / "rl_agent_config.json").string() +
                    ": 'max_len' exceeds the encoder's max_position_embeddings");
  }
  type_embedding_ = get(weights, "type_emb.weight", {3, d});
  for (int64_t l = 0; l < agent_config_.head_layers; ++l) {
    const std::string prefix = "head.layers." + std::to_string(l) + ".";
    head_layers_.push_back(HeadLayer{
        .norm1_weight = vector(weights, prefix + "norm1.weight", d),
        .norm1_bias = vector(weights, prefix + "norm1.bias", d),
        .norm2_weight = vector(weights, prefix + "norm2.weight", d),
        .norm2_bias = vector(weights, prefix + "norm2.bias", d),
        .in_projection = backend.pack_matmul(
            model::checkpoint_tensor(weights.get(prefix + "self_attn.in_proj_weight", {3 * d, d})),
            vector(weights, prefix + "self_attn.in_proj_bias", 3 * d), arithmetic, backend::Activation::none),
        .out_projection = load_linear(weights, prefix + "self_attn.out_proj", d, d, backend::Activation::none),
        .linear1 = load_linear(weights, prefix + "linear1", d, 4 * d, backend::Activation::relu),
        .linear2 = load_linear(weights, prefix + "linear2", 4 * d, d, backend::Activation::none),
    });
  }
  if (weights.find("head.layers." + std::to_string(agent_config_.head_layers) + ".norm1.weight") != nullptr) {
    throw LoadError(weights.source().string() + ": has more decision layers than rl_agent_config.json's head_layers (" +
                    std::to_string(agent_config_.head_layers) + ")");
  }
  scorer_norm_weight_ = vector(weights, "scorer.0.weight", d);
  scorer_norm_bias_ = vector(weights, "scorer.0.bias", d);
  scorer_hidden_ = load_linear(weights, "scorer.1", d, d, backend::Activation::gelu);
  scorer_output_ = load_linear(weights, "scorer.3", d, 1, backend::Activation::none);
  act_hidden_ = load_linear(weights, "act_head.0", d + static_cast<int64_t>(act_feature_count),
                            static_cast<int64_t>(act_hidden_width), backend::Activation::gelu);
  act_output_ = load_linear(weights, "act_head.2", static_cast<int64_t>(act_hidden_width), agent_config_.action_count,
                            backend::Activation::none);
}

std::unique_ptr<backend::PackedMatrix> LayaModel::load_linear(const Checkpoint& weights, const std::string& name,
                                                              int64_t in, int64_t out,
                                                              backend::Activation activation) const {
  return backend_->pack_matmul(model::checkpoint_tensor(weights.get(name + ".weight", {out, in})),
                               vector(weights, name + ".bias", out), arithmetic_, activation);
}

Tensor LayaModel::allocate(DType dtype, std::size_t rows, std::size_t columns) const {
  const std::size_t shape[] = {rows, columns};
  return backend_->allocate(dtype, shape);
}

DType LayaModel::matmul_input_dtype() const {
  return arithmetic_ == backend::Arithmetic::bf16 ? DType::bf16 : DType::fp32;
}

Tensor LayaModel::run_head_layer(const HeadLayer& layer, const Tensor& hidden,
                                 std::span<const backend::AttentionSegment> segments, const Tensor& kept) const {
  const std::size_t d = width_, rows = hidden.rows();
  // nn.TransformerEncoder's nhead = max(1, d // 64), as laya builds it.
  const std::size_t heads = std::max<std::size_t>(1, d / 64);
  const Tensor normed = allocate(matmul_input_dtype(), rows, d);
  heads::layer_norm(*backend_, hidden, layer.norm1_weight, layer.norm1_bias, head_norm_eps, normed);
  const Tensor qkv = allocate(DType::fp32, rows, 3 * d);
  backend_->matmul({.x = normed, .weight = layer.in_projection.get(), .y = qkv});
  const Tensor context = allocate(DType::fp32, rows, d);
  backend_->attention({.q = qkv.slice_columns(0, d),
                       .k = qkv.slice_columns(d, d),
                       .v = qkv.slice_columns(2 * d, d),
                       .segments = segments,
                       .heads = heads,
                       .kv_heads = heads,
                       .head_dim = d / heads,
                       .causal = false,
                       .scale = 1.0F / std::sqrt(static_cast<float>(d / heads)),
                       .arithmetic = arithmetic_,
                       .out = context});
  if (!kept.defined()) {
    backend_->matmul({.x = context, .weight = layer.out_projection.get(), .accumulate = true, .y = hidden});
    finish_head_layer(layer, hidden);
    return hidden;
  }
  // The last layer: only the [CLS] and marker rows are read after it, and everything past attention
  // is row by row, so the output projection and the feed-forward (3/4 of the layer's matmul work)
  // run on those rows alone.
  const Tensor kept_hidden = allocate(DType::fp32, kept.rows(), d);
  const Tensor kept_context = allocate(DType::fp32, kept.rows(), d);
  backend_->gather_rows(hidden, kept, kept_hidden);
  backend_->gather_rows(context, kept, kept_context);
  backend_->matmul({.x = kept_context, .weight = layer.out_projection.get(), .accumulate = true, .y = kept_hidden});
  finish_head_layer(layer, kept_hidden);
  return kept_hidden;
}

void LayaModel::finish_head_layer(const HeadLayer& layer, const Tensor& hidden) const {
  const std::size_t d = width_, rows = hidden.rows();
  // At bf16 the norm writes linear1's bf16 input and linear1 (ReLU applied) linear2's: no conversion
  // passes, and the widest activations (4·d) stored at half the bytes.
  const Tensor normed = allocate(matmul_input_dtype(), rows, d);
  heads::layer_norm(*backend_, hidden, layer.norm2_weight, layer.norm2_bias, head_norm_eps, normed);
  const Tensor feed_forward = allocate(matmul_input_dtype(), rows, 4 * d);
  backend_->matmul({.x = normed, .weight = layer.linear1.get(), .y = feed_forward});
  backend_->matmul({.x = feed_forward, .weight = layer.linear2.get(), .accumulate = true, .y = hidden});
}

std::vector<std::vector<float>> LayaModel::marker_logits(std::span<const Row> rows) {
  const std::size_t d = width_;
  std::vector<std::span<const int32_t>> sequences;
  for (const Row& row : rows) {
    if (row.ids.size() > static_cast<std::size_t>(agent_config_.max_len)) {
      throw std::invalid_argument("LayaModel: a row of " + std::to_string(row.ids.size()) + " tokens exceeds max_len");
    }
    for (const std::size_t marker : row.markers) {
      if (marker >= row.ids.size()) throw std::invalid_argument("LayaModel: a marker lies outside its row");
    }
    sequences.push_back(row.ids);
  }
  last_logits_.clear();
  first_kept_.clear();
  if (rows.empty()) return {};
  const std::span<const float> encoded = encoder_->forward(sequences);
  std::vector<backend::AttentionSegment> segments;
  std::vector<std::size_t> kept_rows;
  std::size_t used = 0;
  for (const Row& row : rows) {
    segments.push_back({used, row.ids.size()});
    first_kept_.push_back(kept_rows.size());
    kept_rows.push_back(used);
    for (const std::size_t position : row.markers) kept_rows.push_back(used + position);
    used += row.ids.size();
  }
  Tensor hidden = allocate(DType::fp32, used, d);
  const std::span<float> values = hidden.values<float>();
  std::copy(encoded.begin(), encoded.end(), values.begin());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const float* type = type_embedding_.data() + static_cast<std::size_t>(rows[r].kind) * d;
    for (std::size_t t = 0; t < segments[r].length; ++t) {
      float* row = values.data() + (segments[r].offset + t) * d;
      for (std::size_t c = 0; c < d; ++c) row[c] += type[c];
    }
  }
  const Tensor kept = row_indices(kept_rows);
  for (std::size_t l = 0; l < head_layers_.size(); ++l) {
    hidden = run_head_layer(head_layers_[l], hidden, segments, l + 1 == head_layers_.size() ? kept : Tensor{});
  }
  if (head_layers_.empty()) {
    kept_hidden_ = allocate(DType::fp32, kept_rows.size(), d);
    backend_->gather_rows(hidden, kept, kept_hidden_);
  } else {
    kept_hidden_ = hidden;
  }

  // The scorer over every marker of every row at once.
  std::vector<std::size_t> marker_rows;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (std::size_t i = 0; i < rows[r].markers.size(); ++i) marker_rows.push_back(first_kept_[r] + 1 + i);
  }
  std::vector<float> logits;
  if (!marker_rows.empty()) {
    const Tensor markers = allocate(DType::fp32, marker_rows.size(), d);
    backend_->gather_rows(kept_hidden_, row_indices(marker_rows), markers);
    heads::layer_norm(*backend_, markers, scorer_norm_weight_, scorer_norm_bias_, head_norm_eps, markers);
    const Tensor scored = allocate(DType::fp32, marker_rows.size(), d);
    backend_->matmul({.x = markers, .weight = scorer_hidden_.get(), .y = scored});
    const Tensor scores = allocate(DType::fp32, marker_rows.size(), 1);
    backend_->matmul({.x = scored, .weight = scorer_output_.get(), .y = scores});
    logits.assign(scores.read_values<float>().begin(), scores.read_values<float>().end());
  }
  std::size_t m = 0;
  for (const Row& row : rows) {
    last_logits_.emplace_back(logits.begin() + static_cast<std::ptrdiff_t>(m),
                              logits.begin() + static_cast<std::ptrdiff_t>(m + row.markers.size()));
    m += row.markers.size();
  }
  return last_logits_;
}

std::vector<float> LayaModel::act_probabilities() {
  const std::size_t d = width_;
  const std::size_t width = d + act_feature_count;
  const std::size_t rows = last_logits_.size();
  if (rows == 0) return {};
  const Tensor features = allocate(DType::fp32, rows, width);
  const std::span<float> feature_values = features.values<float>();
  const std::span<const float> kept = kept_hidden_.read_values<float>();
  for (std::size_t r = 0; r < rows; ++r) {
    float* out = feature_values.data() + r * width;
    // The [CLS] row after the decision layers, then laya's features of the untempered marker softmax:
    // top-1, top-1 − top-2 (0 stands in for a missing second option), entropy / ln k and k/255, with
    // laya's k = max(options, 2) in both.
    std::copy_n(kept.data() + first_kept_[r] * d, d, out);
    const std::vector<float>& z = last_logits_[r];
    const float largest = *std::max_element(z.begin(), z.end());
    std::vector<float> p(z.size());
    float sum = 0.0F;
    for (std::size_t i = 0; i < z.size(); ++i) sum += (p[i] = std::exp(z[i] - largest));
    float entropy = 0.0F;
    for (float& value : p) {
      value /= sum;
      entropy -= value * std::log(std::max(value, 1e-9F));
    }
    std::vector<float> sorted = p;
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    const float second = sorted.size() > 1 ? sorted[1] : 0.0F;
    const auto k = static_cast<float>(std::max<std::size_t>(z.size(), 2));
    out[d] = sorted[0];
    out[d + 1] = sorted[0] - second;
    out[d + 2] = entropy / std::log(k);
    out[d + 3] = k / 255.0F;
  }
  const Tensor hidden = allocate(DType::fp32, rows, act_hidden_width);
  backend_->matmul({.x = features, .weight = act_hidden_.get(), .y = hidden});
  const auto actions = static_cast<std::size_t>(agent_config_.action_count);
  const Tensor act = allocate(DType::fp32, rows, actions);
  backend_->matmul({.x = hidden, .weight = act_output_.get(), .y = act});
  const std::span<const float> act_values = act.read_values<float>();
  std::vector<float> probabilities;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* a = act_values.data() + r * actions;
    const float largest = *std::max_element(a, a + actions);
    float sum = 0.0F;
    for (std::size_t i = 0; i < actions; ++i) sum += std::exp(a[i] - largest);
    probabilities.push_back(std::exp(a[0] - largest) / sum);
  }
  return probabilities;
}

}  // namespace s1::laya
