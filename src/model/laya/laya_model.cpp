#include "model/laya/laya_model.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>

#include "backend/cpu/attention.h"
#include "backend/cpu/layer_norm.h"
#include "backend/cpu/team.h"
#include "model/checkpoint/checkpoint.h"
#include "model/checkpoint/load_error.h"
#include "model/modernbert/config.h"

namespace s1::laya {
namespace {

using checkpoint::Checkpoint;
using checkpoint::LoadError;

// nn.TransformerEncoderLayer's and the scorer's LayerNorm (torch's default eps).
constexpr float head_norm_eps = 1e-5F;
// The act head's hidden width and extra features (laya's DecisionModel, fixed in code).
constexpr std::size_t act_hidden_width = 256;
constexpr std::size_t act_feature_count = 4;

// ReLU in place on bf16 values (a NaN stays a NaN, as torch's relu keeps it). An unconditional
// store of a select, so the compiler vectorises it (a conditional store it left scalar: ~8 ms of
// thread time per 4 x 128 LAYA forward).
void relu_bf16(std::span<backend::cpu::Bf16Bits> values) {
  for (backend::cpu::Bf16Bits& bits : values) {
    const bool negative = (bits & 0x8000U) != 0;
    const bool not_a_number = (bits & 0x7FFFU) > 0x7F80U;
    bits = negative && !not_a_number ? backend::cpu::Bf16Bits{0} : bits;
  }
}

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

LayaModel::LayaModel(const std::filesystem::path& dir, backend::cpu::Precision precision)
    : LayaModel(dir, precision, Checkpoint::open(dir / checkpoint::kSingleFileName)) {}

LayaModel::LayaModel(const std::filesystem::path& dir, backend::cpu::Precision precision, const Checkpoint& weights)
    : agent_config_(read_agent_config(dir / "rl_agent_config.json")),
      precision_(precision),
      encoder_(modernbert::read_modernbert_config(dir / "encoder" / "config.json"), weights, precision, "encoder."),
      scorer_hidden_(load_linear(weights, "scorer.1", encoder_.config().hidden_size, encoder_.config().hidden_size,
                                 precision, backend::cpu::Activation::gelu)),
      scorer_output_(load_linear(weights, "scorer.3", encoder_.config().hidden_size, 1, precision,
                                 backend::cpu::Activation::none)),
      act_hidden_(load_linear(weights, "act_head.0",
                              encoder_.config().hidden_size + static_cast<int64_t>(act_feature_count),
                              static_cast<int64_t>(act_hidden_width), precision, backend::cpu::Activation::gelu)),
      act_output_(load_linear(weights, "act_head.2", static_cast<int64_t>(act_hidden_width), agent_config_.action_count,
                              precision, backend::cpu::Activation::none)) {
  const int64_t d = encoder_.config().hidden_size;
  if (agent_config_.max_len > encoder_.config().max_position_embeddings) {
    throw LoadError((dir / "rl_agent_config.json").string() +
                    ": 'max_len' exceeds the encoder's max_position_embeddings");
  }
  type_embedding_ = get(weights, "type_emb.weight", {3, d});
  for (int64_t l = 0; l < agent_config_.head_layers; ++l) {
    const std::string prefix = "head.layers." + std::to_string(l) + ".";
    head_layers_.push_back(HeadLayer{
        .norm1_weight = get(weights, prefix + "norm1.weight", {d}),
        .norm1_bias = get(weights, prefix + "norm1.bias", {d}),
        .norm2_weight = get(weights, prefix + "norm2.weight", {d}),
        .norm2_bias = get(weights, prefix + "norm2.bias", {d}),
        .in_projection =
            backend::cpu::PackedLinear(get(weights, prefix + "self_attn.in_proj_weight", {3 * d, d}),
                                       get(weights, prefix + "self_attn.in_proj_bias", {3 * d}),
                                       static_cast<std::size_t>(d), static_cast<std::size_t>(3 * d), precision),
        .out_projection =
            load_linear(weights, prefix + "self_attn.out_proj", d, d, precision, backend::cpu::Activation::none),
        .linear1 = load_linear(weights, prefix + "linear1", d, 4 * d, precision, backend::cpu::Activation::none),
        .linear2 = load_linear(weights, prefix + "linear2", 4 * d, d, precision, backend::cpu::Activation::none),
    });
  }
  if (weights.find("head.layers." + std::to_string(agent_config_.head_layers) + ".norm1.weight") != nullptr) {
    throw LoadError(weights.source().string() + ": has more decision layers than rl_agent_config.json's head_layers (" +
                    std::to_string(agent_config_.head_layers) + ")");
  }
  scorer_norm_weight_ = get(weights, "scorer.0.weight", {d});
  scorer_norm_bias_ = get(weights, "scorer.0.bias", {d});
}

backend::cpu::PackedLinear LayaModel::load_linear(const Checkpoint& weights, const std::string& name, int64_t in,
                                                  int64_t out, backend::cpu::Precision precision,
                                                  backend::cpu::Activation activation) {
  return backend::cpu::PackedLinear(get(weights, name + ".weight", {out, in}), get(weights, name + ".bias", {out}),
                                    static_cast<std::size_t>(in), static_cast<std::size_t>(out), precision, activation);
}

LayaModel::~LayaModel() = default;
LayaModel::LayaModel(LayaModel&&) noexcept = default;
LayaModel& LayaModel::operator=(LayaModel&&) noexcept = default;

void LayaModel::run_head_layer(const HeadLayer& layer, std::span<const std::size_t> kept_rows) {
  const auto d = static_cast<std::size_t>(encoder_.config().hidden_size);
  // nn.TransformerEncoder's nhead = max(1, d // 64), as laya builds it.
  const std::size_t heads = std::max<std::size_t>(1, d / 64);
  const std::size_t used = layout_.empty() ? 0 : layout_.back().offset + layout_.back().length;
  const std::span<float> live(hidden_.data(), used * d);
  if (precision_ == backend::cpu::Precision::bf16) {
    // The norm writes the bf16 rows the matmul reads (no conversion pass of its own).
    backend::cpu::layer_norm_to_bf16(live, layer.norm1_weight, layer.norm1_bias, head_norm_eps,
                                     std::span(normed_bf16_).first(used * d));
    layer.in_projection.forward(std::span<const backend::cpu::Bf16Bits>(normed_bf16_), qkv_bf16_);
  } else {
    backend::cpu::layer_norm(live, layer.norm1_weight, layer.norm1_bias, head_norm_eps,
                             std::span(normed_).first(used * d));
    layer.in_projection.forward(normed_, qkv_);
  }
  const bool bf16 = precision_ == backend::cpu::Precision::bf16;
  if (bf16) {
    // Attention writes the bf16 rows the output projection reads (no conversion pass), each thread
    // its share of the query rows.
    backend::cpu::run_team([&](backend::cpu::Team& team) {
      const backend::cpu::Team::Range share = team.share(used);
      backend::cpu::packed_attention_rows(layout_, std::span<const backend::cpu::Bf16Bits>(qkv_bf16_), heads, d / heads,
                                          0, share.begin, share.end, std::span<backend::cpu::Bf16Bits>(context_bf16_),
                                          precision_);
    });
  } else {
    backend::cpu::packed_attention(layout_, qkv_, heads, d / heads, 0, context_, precision_);
  }
  if (kept_rows.empty()) {
    if (bf16) {
      layer.out_projection.forward_accumulate(std::span<const backend::cpu::Bf16Bits>(context_bf16_), hidden_);
    } else {
      layer.out_projection.forward_accumulate(context_, hidden_);
    }
    finish_head_layer(layer, hidden_, used);
    return;
  }
  // The last layer: only the [CLS] and marker rows are read after it, and everything past attention
  // is row by row, so the output projection and the feed-forward (3/4 of the layer's matmul work)
  // run on those rows alone.
  const std::size_t padded = backend::cpu::padded_row_count(kept_rows.size());
  kept_hidden_.assign(padded * d, 0.0F);
  for (std::size_t k = 0; k < kept_rows.size(); ++k)
    std::copy_n(hidden_.data() + kept_rows[k] * d, d, kept_hidden_.data() + k * d);
  const auto gather_context = [&](const auto& context, auto& kept) {
    kept.assign(padded * d, 0);
    for (std::size_t k = 0; k < kept_rows.size(); ++k)
      std::copy_n(context.data() + kept_rows[k] * d, d, kept.data() + k * d);
    layer.out_projection.forward_accumulate(std::span(std::as_const(kept)), kept_hidden_);
  };
  if (bf16) {
    gather_context(context_bf16_, kept_context_bf16_);
  } else {
    gather_context(context_, kept_context_);
  }
  finish_head_layer(layer, kept_hidden_, kept_rows.size());
}

void LayaModel::finish_head_layer(const HeadLayer& layer, std::vector<float>& hidden, std::size_t rows) {
  const auto d = static_cast<std::size_t>(encoder_.config().hidden_size);
  const std::size_t padded = hidden.size() / d;
  const std::span<float> live(hidden.data(), rows * d);
  if (precision_ == backend::cpu::Precision::bf16) {
    // bf16 from the norm into linear1, and from linear1 (ReLU on the bf16 values) into linear2: no
    // conversion passes, and the widest activations (4·d) stored at half the bytes.
    const std::span<backend::cpu::Bf16Bits> normed = std::span(normed_bf16_).first(padded * d);
    backend::cpu::layer_norm_to_bf16(live, layer.norm2_weight, layer.norm2_bias, head_norm_eps, normed.first(rows * d));
    const std::span<backend::cpu::Bf16Bits> feed_forward = std::span(feed_forward_bf16_).first(padded * 4 * d);
    layer.linear1.forward(std::span<const backend::cpu::Bf16Bits>(normed), feed_forward);
    relu_bf16(feed_forward);  // the layer's default activation
    layer.linear2.forward_accumulate(std::span<const backend::cpu::Bf16Bits>(feed_forward), hidden);
    return;
  }
  const std::span<float> normed = std::span(normed_).first(padded * d);
  backend::cpu::layer_norm(live, layer.norm2_weight, layer.norm2_bias, head_norm_eps, normed.first(rows * d));
  const std::span<float> feed_forward = std::span(feed_forward_).first(padded * 4 * d);
  layer.linear1.forward(normed, feed_forward);
  for (float& value : feed_forward) value = std::max(value, 0.0F);  // ReLU, the layer's default activation
  layer.linear2.forward_accumulate(feed_forward, hidden);
}

std::vector<std::vector<float>> LayaModel::marker_logits(std::span<const Row> rows) {
  const auto d = static_cast<std::size_t>(encoder_.config().hidden_size);
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
  if (rows.empty()) return {};
  const std::span<const float> encoded = encoder_.forward(sequences);
  layout_.assign(encoder_.layout().begin(), encoder_.layout().end());
  const std::size_t used = encoded.size() / d;
  const std::size_t padded = backend::cpu::padded_row_count(used);
  hidden_.assign(padded * d, 0.0F);
  std::copy(encoded.begin(), encoded.end(), hidden_.begin());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const float* type = type_embedding_.data() + static_cast<std::size_t>(rows[r].kind) * d;
    for (std::size_t t = 0; t < layout_[r].length; ++t) {
      float* row = hidden_.data() + (layout_[r].offset + t) * d;
      for (std::size_t c = 0; c < d; ++c) row[c] += type[c];
    }
  }
  if (precision_ == backend::cpu::Precision::bf16) {
    normed_bf16_.assign(padded * d, 0);  // rows no sequence owns stay zero (0x0000 is +0.0)
    feed_forward_bf16_.resize(padded * 4 * d);
  } else {
    normed_.assign(padded * d, 0.0F);
    feed_forward_.resize(padded * 4 * d);
  }
  if (precision_ == backend::cpu::Precision::bf16) {
    qkv_bf16_.resize(padded * 3 * d);
    context_bf16_.assign(padded * d, 0);  // rows no sequence owns stay zero
  } else {
    qkv_.resize(padded * 3 * d);
    context_.assign(padded * d, 0.0F);
  }
  kept_rows_.clear();
  first_kept_.clear();
  for (std::size_t r = 0; r < rows.size(); ++r) {
    first_kept_.push_back(kept_rows_.size());
    kept_rows_.push_back(layout_[r].offset);
    for (const std::size_t position : rows[r].markers) kept_rows_.push_back(layout_[r].offset + position);
  }
  for (std::size_t l = 0; l < head_layers_.size(); ++l) {
    run_head_layer(head_layers_[l], l + 1 == head_layers_.size() ? std::span<const std::size_t>(kept_rows_)
                                                                 : std::span<const std::size_t>());
  }
  if (head_layers_.empty()) {
    kept_hidden_.resize(kept_rows_.size() * d);
    for (std::size_t k = 0; k < kept_rows_.size(); ++k)
      std::copy_n(hidden_.data() + kept_rows_[k] * d, d, kept_hidden_.data() + k * d);
  }

  // The scorer over every marker of every row at once.
  std::size_t marker_count = 0;
  for (const Row& row : rows) marker_count += row.markers.size();
  const std::size_t marker_rows = backend::cpu::padded_row_count(std::max<std::size_t>(marker_count, 1));
  std::vector<float> markers(marker_rows * d, 0.0F);
  std::size_t m = 0;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (std::size_t i = 0; i < rows[r].markers.size(); ++i) {
      std::copy_n(kept_hidden_.data() + (first_kept_[r] + 1 + i) * d, d, markers.data() + m * d);
      ++m;
    }
  }
  const std::span<float> live_markers(markers.data(), marker_count * d);
  backend::cpu::layer_norm(live_markers, scorer_norm_weight_, scorer_norm_bias_, head_norm_eps, live_markers);
  std::vector<float> scored(marker_rows * d);
  scorer_hidden_.forward(markers, scored);
  std::vector<float> logits(marker_rows);
  scorer_output_.forward(scored, logits);
  m = 0;
  for (const Row& row : rows) {
    last_logits_.emplace_back(logits.begin() + static_cast<std::ptrdiff_t>(m),
                              logits.begin() + static_cast<std::ptrdiff_t>(m + row.markers.size()));
    m += row.markers.size();
  }
  return last_logits_;
}

std::vector<float> LayaModel::act_probabilities() {
  const auto d = static_cast<std::size_t>(encoder_.config().hidden_size);
  const std::size_t width = d + act_feature_count;
  const std::size_t rows = backend::cpu::padded_row_count(std::max<std::size_t>(last_logits_.size(), 1));
  std::vector<float> features(rows * width, 0.0F);
  for (std::size_t r = 0; r < last_logits_.size(); ++r) {
    float* out = features.data() + r * width;
    // The [CLS] row after the decision layers, then laya's features of the untempered marker softmax:
    // top-1, top-1 − top-2 (0 stands in for a missing second option), entropy / ln k and k/255, with
    // laya's k = max(options, 2) in both.
    std::copy_n(kept_hidden_.data() + first_kept_[r] * d, d, out);
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
  std::vector<float> hidden(rows * act_hidden_width);
  act_hidden_.forward(features, hidden);
  const auto actions = static_cast<std::size_t>(agent_config_.action_count);
  std::vector<float> act(rows * actions);
  act_output_.forward(hidden, act);
  std::vector<float> probabilities;
  for (std::size_t r = 0; r < last_logits_.size(); ++r) {
    const float* a = act.data() + r * actions;
    const float largest = *std::max_element(a, a + actions);
    float sum = 0.0F;
    for (std::size_t i = 0; i < actions; ++i) sum += std::exp(a[i] - largest);
    probabilities.push_back(std::exp(a[0] - largest) / sum);
  }
  return probabilities;
}

}  // namespace s1::laya
