#include "model/bert/bert_model.h"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

#include "backend/cpu/attention.h"
#include "backend/cpu/convert.h"
#include "backend/cpu/layer_norm.h"
#include "backend/cpu/team.h"
#include "model/checkpoint/load_error.h"

namespace s1::bert {
namespace {

using checkpoint::Checkpoint;
using checkpoint::LoadError;

// Resolves checkpoint names: BertModel saves "embeddings.…", task models (BertForMaskedLM, …) nest
// the same weights under "bert.".
class WeightNames {
 public:
  explicit WeightNames(const Checkpoint& weights) : weights_(weights) {
    if (weights.find("embeddings.word_embeddings.weight") == nullptr &&
        weights.find("bert.embeddings.word_embeddings.weight") != nullptr) {
      prefix_ = "bert.";
    }
  }

  std::vector<float> get(const std::string& name, std::initializer_list<int64_t> shape) const {
    return checkpoint::to_float(weights_.get(prefix_ + name, shape));
  }

 private:
  const Checkpoint& weights_;
  std::string prefix_;
};

// Each team thread's rows: an equal share of the `used` packed rows, rounded up to a granule that keeps
// the matmuls' row counts few (PackedLinear builds a primitive per row count; about 8–16 per octave
// here). fp32 rounds shares to 4 rows: its GEMM time follows the row count, and a 16-row share of a
// padded total (the split before) ran 48 rows per thread for an 87-token state and 64 for a 100-token
// one, against 44 and 52 now. bf16 keeps 16, one AMX tile of rows.
size_t rows_per_thread(size_t used, size_t threads, backend::cpu::Precision precision) {
  const size_t share = (used + threads - 1) / threads;
  const size_t min_granule = precision == backend::cpu::Precision::bf16 ? 16 : 4;
  const size_t granule = std::max(min_granule, std::bit_ceil(share) / 16);
  return (share + granule - 1) / granule * granule;
}

}  // namespace

BertEncoder::BertEncoder(const BertConfig& config, const Checkpoint& weights, backend::cpu::Precision precision)
    : config_(config),
      info_{"bert", static_cast<size_t>(config.hidden_size), static_cast<size_t>(config.vocab_size),
            static_cast<size_t>(config.max_position_embeddings)},
      precision_(precision) {
  if (!backend::cpu::linear_supported(precision)) {
    throw LoadError(weights.source().string() + ": bf16 needs a CPU with AVX-512 (AMX preferred); use fp32");
  }
  const WeightNames names(weights);
  const int64_t hidden = config.hidden_size;
  const int64_t inner = config.intermediate_size;
  word_embeddings_ = names.get("embeddings.word_embeddings.weight", {config.vocab_size, hidden});
  position_embeddings_ = names.get("embeddings.position_embeddings.weight", {config.max_position_embeddings, hidden});
  token_type_embedding_ = names.get("embeddings.token_type_embeddings.weight", {config.type_vocab_size, hidden});
  token_type_embedding_.resize(static_cast<size_t>(hidden));  // single sentences: token type 0 only
  embedding_norm_weight_ = names.get("embeddings.LayerNorm.weight", {hidden});
  embedding_norm_bias_ = names.get("embeddings.LayerNorm.bias", {hidden});

  const auto h = static_cast<size_t>(hidden);
  const auto i = static_cast<size_t>(inner);
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
    const std::string layer = "encoder.layer." + std::to_string(l) + ".";
    // Q, K and V stacked along the output dimension: one GEMM whose rows are exactly the
    // [q heads | k heads | v heads] layout backend::cpu::attention reads.
    std::vector<float> qkv_weight, qkv_bias;
    for (const char* part : {"query", "key", "value"}) {
      const auto w = names.get(layer + "attention.self." + part + ".weight", {hidden, hidden});
      const auto b = names.get(layer + "attention.self." + part + ".bias", {hidden});
      qkv_weight.insert(qkv_weight.end(), w.begin(), w.end());
      qkv_bias.insert(qkv_bias.end(), b.begin(), b.end());
    }
    const auto out_w = names.get(layer + "attention.output.dense.weight", {hidden, hidden});
    const auto out_b = names.get(layer + "attention.output.dense.bias", {hidden});
    const auto up_w = names.get(layer + "intermediate.dense.weight", {inner, hidden});
    const auto up_b = names.get(layer + "intermediate.dense.bias", {inner});
    const auto down_w = names.get(layer + "output.dense.weight", {hidden, inner});
    const auto down_b = names.get(layer + "output.dense.bias", {hidden});
    layers_.push_back(Layer{
        backend::cpu::PackedLinear(qkv_weight, qkv_bias, h, 3 * h, precision),
        backend::cpu::PackedLinear(out_w, out_b, h, h, precision),
        backend::cpu::PackedLinear(up_w, up_b, h, i, precision, backend::cpu::Activation::gelu),
        backend::cpu::PackedLinear(down_w, down_b, i, h, precision),
        names.get(layer + "attention.output.LayerNorm.weight", {hidden}),
        names.get(layer + "attention.output.LayerNorm.bias", {hidden}),
        names.get(layer + "output.LayerNorm.weight", {hidden}),
        names.get(layer + "output.LayerNorm.bias", {hidden}),
    });
  }
}

BertEncoder::~BertEncoder() = default;
BertEncoder::BertEncoder(BertEncoder&&) noexcept = default;
BertEncoder& BertEncoder::operator=(BertEncoder&&) noexcept = default;

void BertEncoder::embed(std::span<const std::span<const int32_t>> sequences, size_t rows) {
  const auto width = static_cast<size_t>(config_.hidden_size);
  hidden_.assign(rows * width, 0.0F);
  for (const backend::cpu::PackedSequence& sequence : layout_) {
    const std::span<const int32_t> ids = sequences[static_cast<size_t>(&sequence - layout_.data())];
    for (size_t t = 0; t < sequence.length; ++t) {
      float* row = hidden_.data() + (sequence.offset + t) * width;
      const float* word = word_embeddings_.data() + static_cast<size_t>(ids[t]) * width;
      const float* position = position_embeddings_.data() + t * width;
      // torch adds (word + token type) first, then position: same order, same rounding.
      for (size_t c = 0; c < width; ++c) row[c] = (word[c] + token_type_embedding_[c]) + position[c];
    }
  }
  const size_t used = layout_.empty() ? 0 : (layout_.back().offset + layout_.back().length) * width;
  const std::span<float> rows_in_use(hidden_.data(), used);
  backend::cpu::layer_norm(rows_in_use, embedding_norm_weight_, embedding_norm_bias_,
                           static_cast<float>(config_.layer_norm_eps), rows_in_use);
}

std::span<const float> BertEncoder::forward(std::span<const std::span<const int32_t>> sequences) {
  const auto width = static_cast<size_t>(config_.hidden_size);
  const auto inner = static_cast<size_t>(config_.intermediate_size);
  layout_.clear();
  size_t used = 0;
  for (const std::span<const int32_t> ids : sequences) {
    if (ids.empty()) throw std::invalid_argument("BertEncoder::forward: empty sequence");
    if (ids.size() > static_cast<size_t>(config_.max_position_embeddings)) {
      throw std::invalid_argument("BertEncoder::forward: sequence of " + std::to_string(ids.size()) +
                                  " tokens exceeds max_position_embeddings");
    }
    for (const int32_t id : ids) {
      if (id < 0 || id >= config_.vocab_size) {
        throw std::invalid_argument("BertEncoder::forward: token id " + std::to_string(id) + " out of range");
      }
    }
    layout_.push_back(backend::cpu::PackedSequence{used, ids.size()});
    used += ids.size();
  }
  if (used == 0) return {};
  const auto threads = static_cast<size_t>(backend::cpu::thread_count());
  const size_t per_thread = rows_per_thread(used, threads, precision_);
  const size_t rows = per_thread * threads;
  embed(sequences, rows);
  // Rows no sequence owns are never written by attention: zeros, so the matmuls read finite values.
  if (precision_ == backend::cpu::Precision::bf16) {
    for (std::vector<backend::cpu::Bf16Bits>& qkv : qkv_bf16_) qkv.resize(rows * 3 * width);
    hidden_bf16_.resize(rows * width);
    context_bf16_.resize(rows * width);
    intermediate_bf16_.resize(rows * inner);
    std::fill(context_bf16_.begin() + static_cast<std::ptrdiff_t>(used * width), context_bf16_.end(), 0);
    staged_attention_ = backend::cpu::StagedKeyValues::available(static_cast<size_t>(config_.head_dim()));
    for (backend::cpu::StagedKeyValues& staged : staged_) {
      if (staged_attention_) {
        staged.reset(layout_, static_cast<size_t>(config_.num_attention_heads),
                     static_cast<size_t>(config_.head_dim()));
      }
    }
  } else {
    for (std::vector<float>& qkv : qkv_) qkv.resize(rows * 3 * width);
    context_.resize(rows * width);
    intermediate_.resize(rows * inner);
    std::fill(context_.begin() + static_cast<std::ptrdiff_t>(used * width), context_.end(), 0.0F);
  }
  backend::cpu::run_team([&](backend::cpu::Team& team) { run_layers(team, rows, per_thread); });
  return std::span<const float>(hidden_).first(used * width);
}

void BertEncoder::run_layers(backend::cpu::Team& team, size_t rows, size_t per_thread) {
  const auto width = static_cast<size_t>(config_.hidden_size);
  const auto inner = static_cast<size_t>(config_.intermediate_size);
  const auto heads = static_cast<size_t>(config_.num_attention_heads);
  const auto head_dim = static_cast<size_t>(config_.head_dim());
  const auto eps = static_cast<float>(config_.layer_norm_eps);
  const bool bf16 = precision_ == backend::cpu::Precision::bf16;
  // One granule per thread (several where OpenMP gave the team fewer threads than asked).
  const backend::cpu::Team::Range mine = team.share(rows, per_thread);
  const auto own = [&](auto& buffer, size_t columns) {
    return std::span(buffer).subspan(mine.begin * columns, mine.size() * columns);
  };
  const std::span<float> hidden = own(hidden_, width);
  const std::span<backend::cpu::Bf16Bits> hidden_bf16 =
      bf16 ? own(hidden_bf16_, width) : std::span<backend::cpu::Bf16Bits>();
  if (bf16) backend::cpu::convert_fp32_to_bf16(hidden, hidden_bf16);
  for (size_t l = 0; l < layers_.size(); ++l) {
    const Layer& layer = layers_[l];
    std::vector<float>& qkv = qkv_[l % 2];
    std::vector<backend::cpu::Bf16Bits>& qkv_bf16 = qkv_bf16_[l % 2];
    if (mine.size() != 0) {
      if (bf16) {
        layer.qkv.forward(hidden_bf16, own(qkv_bf16, 3 * width));
        if (staged_attention_) staged_[l % 2].stage(layout_, qkv_bf16, mine.begin, mine.end);
      } else {
        layer.qkv.forward(hidden, own(qkv, 3 * width));
      }
    }
    team.barrier();  // attention reads every row's keys and values
    if (mine.size() == 0) continue;
    // Post-norm: hidden = LayerNorm(hidden + attention output), the sum done by the matmul's store.
    if (bf16) {
      if (staged_attention_) {
        backend::cpu::packed_attention_rows(layout_, qkv_bf16, staged_[l % 2], heads, head_dim, 0, mine.begin, mine.end,
                                            context_bf16_);
      } else {
        backend::cpu::packed_attention_rows(layout_, std::span<const backend::cpu::Bf16Bits>(qkv_bf16), heads, head_dim,
                                            0, mine.begin, mine.end, std::span<backend::cpu::Bf16Bits>(context_bf16_),
                                            precision_);
      }
      layer.attention_output.forward_accumulate(own(context_bf16_, width), hidden);
    } else {
      backend::cpu::packed_attention_rows(layout_, qkv, heads, head_dim, 0, mine.begin, mine.end,
                                          std::span<float>(context_), precision_);
      layer.attention_output.forward_accumulate(own(context_, width), hidden);
    }
    // The GELU activations go to the down projection in its own precision, bf16 straight from the store.
    if (bf16) {
      backend::cpu::layer_norm_to_bf16(hidden, layer.attention_norm_weight, layer.attention_norm_bias, eps, hidden,
                                       hidden_bf16);
      layer.intermediate.forward(hidden_bf16, own(intermediate_bf16_, inner));
      layer.output.forward_accumulate(own(intermediate_bf16_, inner), hidden);
    } else {
      backend::cpu::layer_norm(hidden, layer.attention_norm_weight, layer.attention_norm_bias, eps, hidden);
      layer.intermediate.forward(hidden, own(intermediate_, inner));
      layer.output.forward_accumulate(own(intermediate_, inner), hidden);
    }
    if (bf16 && l + 1 < layers_.size()) {
      backend::cpu::layer_norm_to_bf16(hidden, layer.output_norm_weight, layer.output_norm_bias, eps, hidden,
                                       hidden_bf16);
    } else {
      backend::cpu::layer_norm(hidden, layer.output_norm_weight, layer.output_norm_bias, eps, hidden);
    }
  }
}

}  // namespace s1::bert
