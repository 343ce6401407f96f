#include "model/heads/joint_schema_head.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <stdexcept>
#include <string>

#include "backend/backend.h"
#include "model/checkpoint/checkpoint.h"
#include "model/checkpoint/config_reader.h"
#include "model/checkpoint/load_error.h"

namespace s1::heads {
namespace {

using backend::Activation;
using backend::Arithmetic;
using backend::DType;
using backend::Tensor;
using checkpoint::LoadError;

// nn.LayerNorm's default, used by every norm of the head.
constexpr float layer_norm_eps = 1e-5F;
// F.normalize's and F.cosine_similarity's floors.
constexpr double normalize_eps = 1e-12;
constexpr double cosine_eps = 1e-8;
// The logit scales are clamped at ln 100 before exp, as the public head does.
const double max_log_scale = std::log(100.0);

struct Linear {
  std::unique_ptr<backend::PackedMatrix> matrix;
};

struct LayerNorm {
  std::vector<float> weight, bias;
};

struct Attention {
  Linear query, key_value, out;  // in_proj split as nn.MultiheadAttention splits it (q, then k and v)
};

struct EvidenceLayer {
  LayerNorm query_norm, memory_norm, feedforward_norm;
  Attention attention;
  Linear feedforward_in, feedforward_out;
};

struct FieldLayer {
  LayerNorm norm1, norm2, norm3;
  Attention self_attention, memory_attention;
  Linear linear1, linear2;
};

// Tensors by name, each taken once; what is left unused at the end is a load error.
class WeightFile {
 public:
  explicit WeightFile(const std::filesystem::path& file) : file_(checkpoint::Checkpoint::open(file)), label_(file) {}

  std::vector<float> take(const std::string& name, std::initializer_list<int64_t> shape) {
    const checkpoint::TensorView& tensor = file_.get(name, shape);
    taken_.insert(name);
    return checkpoint::to_float(tensor);
  }

  void finish() const {
    for (const std::string_view name : file_.names()) {
      if (!taken_.contains(std::string(name))) {
        throw LoadError(label_.string() + ": tensor '" + std::string(name) +
                        "' is not a parameter of the joint schema head its joint_head_config.json describes");
      }
    }
  }

 private:
  checkpoint::Checkpoint file_;
  std::filesystem::path label_;
  std::set<std::string> taken_;
};

}  // namespace

struct JointSchemaHead::Weights {
  JointHeadConfig config;
  backend::Backend* backend = nullptr;
  LayerNorm hidden_norm, option_summary_norm, field_norm, option_norm;
  Linear memory_projection, question_projection, option_question_projection, global_projection,
      option_context_projection, option_lexical_projection;
  std::vector<float> type_embedding;  // [3, width]
  std::vector<EvidenceLayer> evidence_layers;
  std::vector<FieldLayer> field_layers;
  Linear scorer_in, scorer_out;
  double prior_logit_scale = 0, joint_logit_scale = 0, residual_gate = 0;

  Linear pack(std::span<const float> weight, std::size_t out, std::size_t in, std::span<const float> bias,
              Activation activation = Activation::none) const {
    const Tensor w = Tensor::of(weight, {out, in});
    const Tensor b = bias.empty() ? Tensor{} : Tensor::of(bias);
    return Linear{backend->pack_matmul(w, b, Arithmetic::fp32, activation)};
  }

  Linear load_linear(WeightFile& file, const std::string& name, std::size_t out, std::size_t in, bool bias,
                     Activation activation = Activation::none) const {
    const auto o = static_cast<int64_t>(out), i = static_cast<int64_t>(in);
    const std::vector<float> weight = file.take(name + ".weight", {o, i});
    const std::vector<float> b = bias ? file.take(name + ".bias", {o}) : std::vector<float>{};
    return pack(weight, out, in, b, activation);
  }

  static LayerNorm load_norm(WeightFile& file, const std::string& name, std::size_t width) {
    const auto w = static_cast<int64_t>(width);
    return LayerNorm{file.take(name + ".weight", {w}), file.take(name + ".bias", {w})};
  }

  Attention load_attention(WeightFile& file, const std::string& name) const {
    const std::size_t w = config.width;
    const auto wi = static_cast<int64_t>(w);
    const std::vector<float> in_weight = file.take(name + ".in_proj_weight", {3 * wi, wi});
    const std::vector<float> in_bias = file.take(name + ".in_proj_bias", {3 * wi});
    const std::span<const float> weights(in_weight), biases(in_bias);
    return Attention{pack(weights.first(w * w), w, w, biases.first(w)),
                     pack(weights.subspan(w * w), 2 * w, w, biases.subspan(w)),
                     load_linear(file, name + ".out_proj", w, w, true)};
  }

  static double load_scalar(WeightFile& file, const std::string& name) { return file.take(name, {}).at(0); }

  // --- ops on [rows, columns] fp32 tensors of the host backend ---

  Tensor allocate(std::size_t rows, std::size_t columns) const {
    const std::array<std::size_t, 2> shape{rows, columns};
    return backend->allocate(DType::fp32, shape);
  }

  Tensor normed(const Tensor& x, const LayerNorm& norm) const {
    Tensor y = allocate(x.rows(), x.row_size());
    backend->norm({.kind = backend::NormCall::Kind::layer,
                   .x = x,
                   .weight = Tensor::of(std::span<const float>(norm.weight)),
                   .bias = Tensor::of(std::span<const float>(norm.bias)),
                   .residual = {},
                   .gate = {},
                   .eps = layer_norm_eps,
                   .y = y});
    return y;
  }

  Tensor linear(const Tensor& x, const Linear& layer) const {
    Tensor y = allocate(x.rows(), layer.matrix->out_features());
    backend->matmul({.x = x, .weight = layer.matrix.get(), .accumulate = false, .y = y});
    return y;
  }

  // y += x·Wᵀ + b: the residual stream.
  void add_linear(const Tensor& x, const Linear& layer, const Tensor& y) const {
    backend->matmul({.x = x, .weight = layer.matrix.get(), .accumulate = true, .y = y});
  }

  // Multi-head attention of `queries` to `keys` (whole rows, no mask), out_proj added to `residual`.
  // Per head: scores = q_h·k_hᵀ/√d as a matmul against the packed keys, softmax_rows, then the
  // weighted values as a matmul against the packed transposed values. (The seam's attention op pairs
  // each query row with key rows of its own segment, which cross-attention does not have.)
  void attend(const Tensor& queries, const Tensor& keys, const Attention& attention, const Tensor& residual) const {
    const std::size_t w = config.width, heads = config.heads, d = w / heads;
    const std::size_t nq = queries.rows(), nk = keys.rows();
    const Tensor q = linear(queries, attention.query);
    const Tensor kv = linear(keys, attention.key_value);
    const std::span<const float> qv = q.read_values<float>(), kvv = kv.read_values<float>();
    const Tensor out = allocate(nq, w);
    const float scale = 1.0F / std::sqrt(static_cast<float>(d));
    std::vector<float> qh(nq * d), kh(nk * d), vt(d * nk);
    const Tensor scores = allocate(nq, nk), weights = allocate(nq, nk), head_out = allocate(nq, d);
    for (std::size_t h = 0; h < heads; ++h) {
      for (std::size_t r = 0; r < nq; ++r) {
        for (std::size_t c = 0; c < d; ++c) qh[r * d + c] = qv[r * w + h * d + c] * scale;
      }
      for (std::size_t r = 0; r < nk; ++r) {
        for (std::size_t c = 0; c < d; ++c) {
          kh[r * d + c] = kvv[r * 2 * w + h * d + c];
          vt[c * nk + r] = kvv[r * 2 * w + w + h * d + c];
        }
      }
      const auto key_matrix =
          backend->pack_matmul(Tensor::of(std::span<const float>(kh), {nk, d}), {}, Arithmetic::fp32, Activation::none);
      const auto value_matrix =
          backend->pack_matmul(Tensor::of(std::span<const float>(vt), {d, nk}), {}, Arithmetic::fp32, Activation::none);
      backend->matmul({.x = Tensor::of(std::span<const float>(qh), {nq, d}),
                       .weight = key_matrix.get(),
                       .accumulate = false,
                       .y = scores});
      backend->softmax_rows(scores, {}, false, weights);
      backend->matmul({.x = weights, .weight = value_matrix.get(), .accumulate = false, .y = head_out});
      const std::span<const float> ho = head_out.read_values<float>();
      const std::span<float> o = out.values<float>();
      for (std::size_t r = 0; r < nq; ++r) {
        for (std::size_t c = 0; c < d; ++c) o[r * w + h * d + c] = ho[r * d + c];
      }
    }
    add_linear(out, attention.out, residual);
  }

  void feed_forward(const Tensor& x, const LayerNorm& norm, const Linear& in, const Linear& out) const {
    add_linear(linear(normed(x, norm), in), out, x);
  }
};

JointHeadConfig read_joint_head_config(const std::filesystem::path& file) {
  checkpoint::ConfigReader reader = checkpoint::ConfigReader::from_file(file);
  auto positive = [&](std::string_view key) {
    const auto value = reader.required<int64_t>(key);
    reader.require_positive(key, value);
    return static_cast<std::size_t>(value);
  };
  JointHeadConfig config;
  config.hidden_size = positive("hidden_size");
  config.width = positive("width");
  config.routing_layers = positive("routing_layers");
  config.layers = positive("layers");
  config.heads = positive("heads");
  config.feedforward = positive("feedforward");
  if (config.width % config.heads != 0) reader.reject("heads", "must divide width (the attention head size)");
  reader.finish();
  return config;
}

JointSchemaHead::JointSchemaHead(const JointHeadConfig& config, const std::filesystem::path& weights_file,
                                 backend::Backend& backend)
    : weights_(std::make_unique<Weights>()) {
  Weights& w = *weights_;
  w.config = config;
  w.backend = &backend;
  WeightFile file(weights_file);
  const std::size_t h = config.hidden_size, width = config.width, ff = config.feedforward;
  w.hidden_norm = Weights::load_norm(file, "hidden_norm", h);
  w.memory_projection = w.load_linear(file, "memory_projection", width, h, false);
  w.question_projection = w.load_linear(file, "question_projection", width, h, false);
  w.option_question_projection = w.load_linear(file, "option_question_projection", width, h, false);
  w.global_projection = w.load_linear(file, "global_projection", width, h, false);
  w.option_context_projection = w.load_linear(file, "option_context_projection", width, h, false);
  w.option_lexical_projection = w.load_linear(file, "option_lexical_projection", width, h, false);
  w.type_embedding = file.take("type_embedding.weight", {3, static_cast<int64_t>(width)});
  for (std::size_t i = 0; i < config.routing_layers; ++i) {
    const std::string name = "evidence_layers." + std::to_string(i);
    w.evidence_layers.push_back(EvidenceLayer{
        Weights::load_norm(file, name + ".query_norm", width), Weights::load_norm(file, name + ".memory_norm", width),
        Weights::load_norm(file, name + ".feedforward_norm", width), w.load_attention(file, name + ".attention"),
        w.load_linear(file, name + ".feedforward.0", ff, width, true, Activation::gelu),
        w.load_linear(file, name + ".feedforward.3", width, ff, true)});
  }
  w.option_summary_norm = Weights::load_norm(file, "option_summary_norm", width);
  for (std::size_t i = 0; i < config.layers; ++i) {
    const std::string name = "layers." + std::to_string(i);
    w.field_layers.push_back(
        FieldLayer{Weights::load_norm(file, name + ".norm1", width), Weights::load_norm(file, name + ".norm2", width),
                   Weights::load_norm(file, name + ".norm3", width), w.load_attention(file, name + ".self_attn"),
                   w.load_attention(file, name + ".multihead_attn"),
                   w.load_linear(file, name + ".linear1", ff, width, true, Activation::gelu),
                   w.load_linear(file, name + ".linear2", width, ff, true)});
  }
  w.field_norm = Weights::load_norm(file, "field_norm", width);
  w.option_norm = Weights::load_norm(file, "option_norm", width);
  w.scorer_in = w.load_linear(file, "residual_scorer.0", width, 4 * width, true, Activation::gelu);
  w.scorer_out = w.load_linear(file, "residual_scorer.3", 1, width, true);
  w.prior_logit_scale = Weights::load_scalar(file, "prior_logit_scale");
  w.joint_logit_scale = Weights::load_scalar(file, "joint_logit_scale");
  w.residual_gate = Weights::load_scalar(file, "residual_gate");
  file.finish();
}

JointSchemaHead::~JointSchemaHead() = default;
JointSchemaHead::JointSchemaHead(JointSchemaHead&&) noexcept = default;
JointSchemaHead& JointSchemaHead::operator=(JointSchemaHead&&) noexcept = default;

const JointHeadConfig& JointSchemaHead::config() const { return weights_->config; }

namespace {

double dot(std::span<const float> a, std::span<const float> b) {
  double sum = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) sum += static_cast<double>(a[i]) * b[i];
  return sum;
}

double norm2(std::span<const float> a) { return std::sqrt(dot(a, a)); }

}  // namespace

std::vector<std::vector<double>> JointSchemaHead::logits(std::span<const float> hidden, std::span<const int32_t> ids,
                                                         std::span<const JointQuestionLayout> layout,
                                                         const decoder::OutputMatrix& lm_head) {
  const Weights& w = *weights_;
  const std::size_t tokens = ids.size(), h = w.config.hidden_size, width = w.config.width;
  if (tokens == 0 || hidden.size() != tokens * h) {
    throw std::invalid_argument("joint schema head: hidden states must be [tokens, hidden_size]");
  }
  if (layout.empty()) throw std::invalid_argument("joint schema head: the record has no question");
  if (lm_head.hidden() != h) throw std::invalid_argument("joint schema head: LM head rows are not hidden_size wide");
  auto check_span = [&](const TokenSpan& span) {
    if (span.begin >= span.end || span.end > tokens) {
      throw std::invalid_argument("joint schema head: a span is empty or outside the prompt");
    }
  };
  std::vector<std::size_t> owner;  // the question of each option
  std::vector<TokenSpan> option_spans;
  for (std::size_t q = 0; q < layout.size(); ++q) {
    check_span(layout[q].question);
    if (layout[q].options.empty()) throw std::invalid_argument("joint schema head: a question has no option");
    for (const TokenSpan& span : layout[q].options) {
      check_span(span);
      owner.push_back(q);
      option_spans.push_back(span);
    }
  }
  const std::size_t questions = layout.size(), options = option_spans.size();

  const Tensor normalized = w.normed(Tensor::of(hidden, {tokens, h}), w.hidden_norm);
  const std::span<const float> normal = normalized.read_values<float>();
  const Tensor memory = w.linear(normalized, w.memory_projection);

  // Span means, summed in double (the reference sums fp32 prefix sums; this is the exact mean).
  auto mean_into = [&](const TokenSpan& span, auto row_of, std::span<float> out) {
    std::vector<double> sum(h, 0.0);
    for (std::size_t t = span.begin; t < span.end; ++t) {
      const std::span<const float> row = row_of(t);
      for (std::size_t i = 0; i < h; ++i) sum[i] += row[i];
    }
    const auto count = static_cast<double>(span.end - span.begin);
    for (std::size_t i = 0; i < h; ++i) out[i] = static_cast<float>(sum[i] / count);
  };
  auto hidden_row = [&](std::size_t t) { return normal.subspan(t * h, h); };
  std::vector<float> lm_row(h);
  auto lexical_row = [&](std::size_t t) {
    lm_head.copy_row(static_cast<std::size_t>(ids[t]), lm_row);
    return std::span<const float>(lm_row);
  };
  const Tensor question_vectors = w.allocate(questions, h);
  const Tensor option_contexts = w.allocate(options, h);
  const Tensor lexical = w.allocate(options, h);
  for (std::size_t q = 0; q < questions; ++q) {
    mean_into(layout[q].question, hidden_row, question_vectors.values<float>().subspan(q * h, h));
  }
  for (std::size_t o = 0; o < options; ++o) {
    mean_into(option_spans[o], hidden_row, option_contexts.values<float>().subspan(o * h, h));
    mean_into(option_spans[o], lexical_row, lexical.values<float>().subspan(o * h, h));
  }
  const std::span<const float> global = hidden_row(tokens - 1);

  // Option queries: context + lexical + their question, then routed through the token memory.
  const Tensor routed = w.linear(option_contexts, w.option_context_projection);
  w.add_linear(lexical, w.option_lexical_projection, routed);
  {
    const Tensor per_question = w.linear(question_vectors, w.option_question_projection);
    const std::span<const float> pq = per_question.read_values<float>();
    const std::span<float> r = routed.values<float>();
    for (std::size_t o = 0; o < options; ++o) {
      for (std::size_t i = 0; i < width; ++i) r[o * width + i] += pq[owner[o] * width + i];
    }
  }
  for (const EvidenceLayer& layer : w.evidence_layers) {
    w.attend(w.normed(routed, layer.query_norm), w.normed(memory, layer.memory_norm), layer.attention, routed);
    w.feed_forward(routed, layer.feedforward_norm, layer.feedforward_in, layer.feedforward_out);
  }

  // Fields: each question's own projection, its options' attention-weighted summary, the global
  // state and its type.
  const Tensor base = w.linear(question_vectors, w.question_projection);
  const std::span<const float> base_values = base.read_values<float>(), routed_values = routed.read_values<float>();
  const Tensor summaries = w.allocate(questions, width);
  {
    const std::span<float> s = summaries.values<float>();
    const double scale = 1.0 / std::sqrt(static_cast<double>(width));
    std::size_t first = 0;
    for (std::size_t q = 0; q < questions; ++q) {
      const std::size_t count = layout[q].options.size();
      std::vector<double> score(count);
      for (std::size_t k = 0; k < count; ++k) {
        score[k] =
            dot(routed_values.subspan((first + k) * width, width), base_values.subspan(q * width, width)) * scale;
      }
      const double top = *std::ranges::max_element(score);
      double total = 0.0;
      for (double& value : score) total += (value = std::exp(value - top));
      for (std::size_t i = 0; i < width; ++i) {
        double sum = 0.0;
        for (std::size_t k = 0; k < count; ++k) sum += score[k] / total * routed_values[(first + k) * width + i];
        s[q * width + i] = static_cast<float>(sum);
      }
      first += count;
    }
  }
  const Tensor fields = w.normed(summaries, w.option_summary_norm);
  {
    const Tensor global_field = w.linear(Tensor::of(global, {1, h}), w.global_projection);
    const std::span<const float> g = global_field.read_values<float>();
    const std::span<float> f = fields.values<float>();
    for (std::size_t q = 0; q < questions; ++q) {
      const std::size_t type = static_cast<std::size_t>(layout[q].type);
      for (std::size_t i = 0; i < width; ++i) {
        f[q * width + i] += base_values[q * width + i] + g[i] + w.type_embedding[type * width + i];
      }
    }
  }
  for (const FieldLayer& layer : w.field_layers) {
    const Tensor self_input = w.normed(fields, layer.norm1);
    w.attend(self_input, self_input, layer.self_attention, fields);
    w.attend(w.normed(fields, layer.norm2), memory, layer.memory_attention, fields);
    w.feed_forward(fields, layer.norm3, layer.linear1, layer.linear2);
  }
  const Tensor final_fields = w.normed(fields, w.field_norm);
  const Tensor option_vectors = w.normed(routed, w.option_norm);
  const std::span<const float> ff = final_fields.read_values<float>(), ov = option_vectors.read_values<float>();

  // The residual scorer over [field, option, field⊙option, |field − option|].
  const Tensor features = w.allocate(options, 4 * width);
  {
    const std::span<float> x = features.values<float>();
    for (std::size_t o = 0; o < options; ++o) {
      const float* f = &ff[owner[o] * width];
      const float* v = &ov[o * width];
      float* row = &x[o * 4 * width];
      for (std::size_t i = 0; i < width; ++i) {
        row[i] = f[i];
        row[width + i] = v[i];
        row[2 * width + i] = f[i] * v[i];
        row[3 * width + i] = std::fabs(f[i] - v[i]);
      }
    }
  }
  const Tensor residual = w.linear(w.linear(features, w.scorer_in), w.scorer_out);
  const std::span<const float> residual_values = residual.read_values<float>();

  const double prior_scale = std::exp(std::min(w.prior_logit_scale, max_log_scale));
  const double joint_scale = std::exp(std::min(w.joint_logit_scale, max_log_scale));
  const double gate = 1.0 / (1.0 + std::exp(-w.residual_gate));
  const std::span<const float> question_values = question_vectors.read_values<float>();
  const std::span<const float> lexical_values = lexical.read_values<float>();
  std::vector<std::vector<double>> out(questions);
  std::vector<float> anchor(h);
  for (std::size_t o = 0; o < options; ++o) {
    const std::size_t q = owner[o];
    for (std::size_t i = 0; i < h; ++i) anchor[i] = question_values[q * h + i] + global[i];
    const std::span<const float> lex = lexical_values.subspan(o * h, h);
    const double prior =
        prior_scale * dot(lex, anchor) / (std::max(norm2(lex), normalize_eps) * std::max(norm2(anchor), normalize_eps));
    const std::span<const float> f = ff.subspan(q * width, width), v = ov.subspan(o * width, width);
    const double cosine = dot(f, v) / (std::max(norm2(f), cosine_eps) * std::max(norm2(v), cosine_eps));
    out[q].push_back(prior + gate * (joint_scale * cosine + residual_values[o]));
  }
  return out;
}

}  // namespace s1::heads
