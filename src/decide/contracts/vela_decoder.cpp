#include "decide/contracts/vela_decoder.h"

#include <algorithm>
#include <span>

#include "decide/contract_common.h"
#include "decide/contracts/label_token.h"
#include "decide/contracts/vela_encoder.h"
#include "decide/prompt.h"
#include "decide/token_budget.h"
#include "model/checkpoint/checkpoint.h"
#include "model/checkpoint/load_error.h"
#include "model/decoder/causal_decoder.h"
#include "model/families.h"
#include "model/heads/candidate_head.h"

namespace s1::decide {
namespace {

constexpr std::string_view parts_head = "Context:\n";
constexpr std::string_view segment_close = "\n</segment>\n";
constexpr std::string_view single_suffix =
    "\n\nSelect the single option best supported by the context and instructions.\nDecision:";
constexpr std::string_view abstain_key = "[ABS]";
constexpr std::string_view abstain_description = "None of the shown options applies.";
// The runtime's floor for the parts' budget, however long the questions are.
constexpr std::size_t min_part_budget = 64;

std::string text_of(const api::Json& value) { return value.is_null() ? std::string() : python_text(value); }

std::string option_piece(std::string_view key, const std::string& description) {
  const api::Json option = {{"description", description}, {"key", std::string(key)}};
  return "\n<option>\n" + python_compact_json(option) + "\n</option>";
}

std::string segment_open(std::string_view role) { return "<segment role=\"" + std::string(role) + "\">\n"; }

}  // namespace

VelaDecoderSettings read_vela_decoder_settings(checkpoint::ConfigReader& decision_file) {
  VelaDecoderSettings settings;
  read_served_model_identity(decision_file, settings);
  settings.precision = read_precision(decision_file, backend::cpu::Precision::fp32);
  const auto max_length = decision_file.optional<int64_t>("max_length", static_cast<int64_t>(settings.max_length));
  if (max_length < 1) decision_file.reject("max_length", "must be at least 1");
  settings.max_length = static_cast<std::size_t>(max_length);
  decision_file.finish();
  return settings;
}

std::vector<std::string> vela_block_pieces(const api::Question& question, const std::vector<std::string>& roles) {
  std::string target;
  for (const std::string& role : roles) target += (target.empty() ? "" : ", ") + role;
  // The runtime reads a noul question as a two-option choice.
  const std::string type = question.type == api::QuestionType::score ? "score" : "choice";
  std::vector<std::string> pieces{"\n\nTask type: " + type + "\nTarget: " + target + "\nQuestion:\n" +
                                  text_of(question.instructions) + "\nOptions:"};
  for (const auto& [name, description] : vela_named_options(question))
    pieces.push_back(option_piece(name, description));
  if (question.type != api::QuestionType::score) {
    pieces.push_back(option_piece(abstain_key, std::string(abstain_description)));
  }
  pieces.emplace_back(single_suffix);
  return pieces;
}

api::Result<VelaTree> vela_render_tree(const text::Tokenizer& tokenizer, const api::DecisionRequest& request,
                                       std::size_t max_length) {
  const auto ids = [&](std::string_view piece) { return encode_without_special_tokens(tokenizer, piece); };
  const std::vector<VelaPart> parts = vela_parts(request.state);
  std::vector<std::string> roles;
  for (const VelaPart& part : parts) roles.push_back(part.role);

  VelaTree tree;
  // What the runtime's budget counts for each question: its tokens plus one per option and one
  // more, a cost it shares with the encoder's marker layout.
  std::size_t schema = 0;
  for (const api::Question& question : request.questions) {
    const std::vector<std::string> pieces = vela_block_pieces(question, roles);
    VelaBlock block;
    for (std::size_t p = 0; p < pieces.size(); ++p) {
      const std::vector<int32_t> piece = ids(pieces[p]);
      block.tokens.insert(block.tokens.end(), piece.begin(), piece.end());
      if (p > 0 && p + 1 < pieces.size()) block.endpoints.push_back(block.tokens.size() - 1);
    }
    block.real_options = vela_named_options(question).size();
    const bool abstains = block.endpoints.size() > block.real_options;
    schema += 1 + block.tokens.size() + block.real_options + (abstains ? 1 : 0);
    tree.blocks.push_back(std::move(block));
  }

  std::size_t overhead = ids(parts_head).size();
  std::vector<std::vector<int32_t>> texts;
  for (const VelaPart& part : parts) {
    overhead += ids(segment_open(part.role)).size() + ids(segment_close).size();
    texts.push_back(ids(part.text));
    tree.state_tokens += texts.back().size();
  }
  // The runtime's truncation with every part read, against its floor for the parts' budget.
  const std::size_t room = std::max(min_part_budget, max_length > overhead ? max_length - overhead : 0);
  std::vector<std::size_t> lengths;
  for (const auto& text : texts) lengths.push_back(text.size());
  const std::size_t fixed = 3 + parts.size() + schema;
  const std::optional<std::vector<std::size_t>> budget = vela_fit_parts(lengths, fixed, room);
  if (!budget) {
    return api::ApiError::make(api::ErrorCode::max_tokens_exceeded,
                               "The questions of this request leave no room for the state in this model's " +
                                   std::to_string(max_length) + " tokens");
  }
  for (std::size_t i = 0; i < texts.size(); ++i) texts[i].resize(std::min(texts[i].size(), (*budget)[i]));
  tree.prefix = ids(parts_head);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::vector<int32_t> open = ids(segment_open(parts[i].role));
    const std::vector<int32_t> close = ids(segment_close);
    tree.prefix.insert(tree.prefix.end(), open.begin(), open.end());
    tree.prefix.insert(tree.prefix.end(), texts[i].begin(), texts[i].end());
    tree.prefix.insert(tree.prefix.end(), close.begin(), close.end());
  }
  return tree;
}

namespace {

class VelaDecoderPlan : public runtime::Plan {
 public:
  std::vector<int32_t> shared;                    // the parts' tokens run once
  std::vector<std::vector<int32_t>> branches;     // per question: the rest of the parts, then its block
  std::vector<std::vector<std::size_t>> outputs;  // per question: endpoints, then the block's last token
  std::vector<std::size_t> real_options;
};

void check_head_file(const checkpoint::Checkpoint& weights) {
  const std::vector<std::string> used = heads::CandidateHead::tensor_names("head.");
  for (const std::string_view name : weights.names()) {
    // set_bias and the span heads (span2.*, span_broad.*) answer set and span questions.
    if (std::ranges::find(used, name) != used.end() || name == "set_bias" || name.starts_with("span2.") ||
        name.starts_with("span_broad.")) {
      continue;
    }
    throw checkpoint::LoadError(weights.source().string() + ": tensor '" + std::string(name) +
                                "' is not a Vela 2.0 decoder head tensor (head.*, set_bias, span2.*, span_broad.*)");
  }
}

class VelaDecoderEngine : public PrefixReusingEngine {
 public:
  VelaDecoderEngine(const std::filesystem::path& model_dir, VelaDecoderSettings settings)
      : settings_(std::move(settings)),
        tokenizer_(text::Tokenizer::from_file(model_dir / "tokenizer.json")),
        calibration_(read_vela_calibration(model_dir / "calibration.json")),
        decoder_(model::load_causal_decoder(model_dir, settings_.precision)),
        head_(load_head(model_dir / vela_decoder_heads_file, decoder_->info().hidden_size)) {
    max_length_ = std::min(settings_.max_length, decoder_->info().max_positions);
  }

  runtime::ModelInfo info() const override {
    return served_model_info(settings_.description, api::max_choice_options, max_length_, "top2_margin");
  }

  api::Result<std::unique_ptr<runtime::Plan>> prepare(const api::DecisionRequest& request,
                                                      const runtime::PrepareLimits& limits) const override {
    auto tree = vela_render_tree(tokenizer_, request, max_length_);
    if (!tree) return tree.error();
    auto plan = std::make_unique<VelaDecoderPlan>();
    const std::vector<int32_t>& prefix = tree.value().prefix;
    // The hybrid's chunk grid: a shared run of whole chunks keeps each branch's grid its own.
    const std::size_t granularity = decoder_->info().prefix_granularity;
    const std::size_t shared = prefix.size() / granularity * granularity;
    plan->shared.assign(prefix.begin(), prefix.begin() + static_cast<std::ptrdiff_t>(shared));
    int64_t logical = static_cast<int64_t>(prefix.size());
    for (const VelaBlock& block : tree.value().blocks) {
      logical += static_cast<int64_t>(block.tokens.size());
      std::vector<int32_t> tokens(prefix.begin() + static_cast<std::ptrdiff_t>(shared), prefix.end());
      const std::size_t offset = tokens.size();
      tokens.insert(tokens.end(), block.tokens.begin(), block.tokens.end());
      std::vector<std::size_t> outputs;
      for (const std::size_t endpoint : block.endpoints) outputs.push_back(offset + endpoint);
      outputs.push_back(tokens.size() - 1);
      plan->branches.push_back(std::move(tokens));
      plan->outputs.push_back(std::move(outputs));
      plan->real_options.push_back(block.real_options);
    }
    plan->input_tokens = logical;
    if (auto error = check_request_budget(plan->input_tokens, limits.token_budget)) return *error;
    return std::unique_ptr<runtime::Plan>(std::move(plan));
  }

  api::Result<runtime::RawOutputs> run(runtime::Plan& base_plan) override {
    const auto& plan = static_cast<const VelaDecoderPlan&>(base_plan);
    std::shared_ptr<const memory::SequenceMemory> prefix;
    if (!plan.shared.empty()) prefix = prefix_memory(*decoder_, plan.shared, prefix_cache(), base_plan.cached_tokens);
    std::vector<decoder::Branch> branches;
    for (std::size_t q = 0; q < plan.branches.size(); ++q) branches.push_back({plan.branches[q], plan.outputs[q]});
    const std::size_t hidden = decoder_->info().hidden_size;
    runtime::RawOutputs raw;
    std::size_t q = 0;
    for (const decoder::BranchOutput& output : decoder_->forward(prefix.get(), branches, false)) {
      const std::span<const float> rows(output.hidden);
      const std::size_t endpoints = rows.size() / hidden - 1;
      const std::vector<float> logits =
          head_.logits(rows.subspan(endpoints * hidden, hidden), rows.first(endpoints * hidden));
      // The [ABS] logit is read and left out: the answer is over the real options only.
      raw.label_scores.emplace_back(logits.begin(),
                                    logits.begin() + static_cast<std::ptrdiff_t>(plan.real_options[q++]));
    }
    return raw;
  }

  api::Result<std::vector<api::Answer>> finish(const api::DecisionRequest& request, const runtime::Plan& /*plan*/,
                                               runtime::RawOutputs outputs) const override {
    std::vector<api::Answer> answers;
    for (std::size_t q = 0; q < request.questions.size(); ++q) {
      const std::vector<float> logits(outputs.label_scores[q].begin(), outputs.label_scores[q].end());
      auto answer = vela_answer(request.questions[q].type, logits, calibration_);
      if (!answer) return answer.error();
      answers.push_back(std::move(answer.value()));
    }
    return answers;
  }

 private:
  static heads::CandidateHead load_head(const std::filesystem::path& path, std::size_t hidden) {
    const checkpoint::Checkpoint weights = checkpoint::Checkpoint::open(path);
    check_head_file(weights);
    return heads::CandidateHead(weights, "head.", hidden);
  }

  VelaDecoderSettings settings_;
  text::Tokenizer tokenizer_;
  VelaCalibration calibration_;
  std::unique_ptr<decoder::CausalDecoder> decoder_;
  heads::CandidateHead head_;
  std::size_t max_length_ = 0;
};

}  // namespace

std::unique_ptr<runtime::Engine> make_vela_decoder_engine(const std::filesystem::path& model_dir,
                                                          const VelaDecoderSettings& settings) {
  return std::make_unique<VelaDecoderEngine>(model_dir, settings);
}

}  // namespace s1::decide
