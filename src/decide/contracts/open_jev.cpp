#include "decide/contracts/open_jev.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

#include "backend/cpu/linear.h"
#include "decide/answer_math.h"
#include "decide/contract_common.h"
#include "decide/contracts/embedding_similarity.h"
#include "decide/contracts/label_token.h"
#include "decide/prompt.h"
#include "decide/token_budget.h"
#include "model/checkpoint/load_error.h"
#include "model/decoder/causal_decoder.h"
#include "model/families.h"
#include "text/tokenizer.h"

namespace s1::decide {
namespace {

// The reference's pinned checkpoints (system1-omni src/models/open_jev/native/src/contract.rs).
constexpr std::array<OpenJevCheckpoint, 2> pinned_checkpoints{{
    {"Open-Jev-27B-v1.1", "Qwen/Qwen3.8-27B", "1d4bf0f2ff6012fd82039f2fa52739d0dd7c60c0",
     "28cf73067d5b337860bbef3c85b8b82ba8730956", "open-jev-27b-v1.1"},
    {"Open-Jev-9B", "Qwen/Qwen3.5-9B", "c202236235762e1c871ad0ccb60c8ee5ba337b9a",
     "47e966881e489511c0c7f5633a9e1960a676a551", "open-jev-9b"},
}};

constexpr std::string_view candidate_question = "Is this proposed answer correct? Answer Yes or No.";
constexpr std::string_view noul_question = "Is the answer to this question yes? Answer Yes or No.";

}  // namespace

OpenJevExport read_open_jev_export(const std::filesystem::path& path) {
  checkpoint::ConfigReader reader = checkpoint::ConfigReader::from_file(path);
  OpenJevExport file;
  if (reader.required<std::string>("format") != open_jev_export_format) {
    reader.reject("format", "must be \"" + std::string(open_jev_export_format) + "\" (an Open-Jev merged text export)");
  }
  file.model_id = reader.required<std::string>("model_id");
  file.base_revision = reader.required<std::string>("base_revision");
  file.checkpoint_revision = reader.required<std::string>("checkpoint_revision");
  file.temperature = reader.required<double>("temperature");
  if (!std::isfinite(file.temperature) || !(file.temperature > 0.0)) {
    reader.reject("temperature", "must be a finite number above 0");
  }
  const int64_t max_length = reader.required<int64_t>("max_length");
  if (max_length < 1 || max_length > static_cast<int64_t>(open_jev_max_length_limit)) {
    reader.reject("max_length", "must be within 1 to 16384 tokens");
  }
  file.max_length = static_cast<std::size_t>(max_length);
  file.chat_prefix = reader.required<std::string>("chat_prefix");
  file.chat_suffix = reader.required<std::string>("chat_suffix");
  // The reference stores the trained FP32 head as JSON numbers and reads each back as f64 → f32.
  for (const double weight : reader.required<std::vector<double>>("head_weight")) {
    file.head_weight.push_back(static_cast<float>(weight));
  }
  if (file.head_weight.empty() || !std::ranges::all_of(file.head_weight, [](float w) { return std::isfinite(w); })) {
    reader.reject("head_weight", "must be a non-empty array of finite numbers");
  }
  file.head_bias = static_cast<float>(reader.required<double>("head_bias"));
  if (!std::isfinite(file.head_bias)) reader.reject("head_bias", "must be a finite number");
  reader.finish();
  return file;
}

std::optional<OpenJevCheckpoint> open_jev_checkpoint(std::string_view model_id) {
  for (const OpenJevCheckpoint& checkpoint : pinned_checkpoints) {
    if (checkpoint.model_id == model_id) return checkpoint;
  }
  return std::nullopt;
}

OpenJevSettings read_open_jev_settings(checkpoint::ConfigReader& decision_file, const OpenJevExport& export_file) {
  OpenJevSettings settings;
  settings.precision = backend::cpu::linear_supported(backend::cpu::Precision::bf16) ? backend::cpu::Precision::bf16
                                                                                     : backend::cpu::Precision::fp32;
  const std::optional<OpenJevCheckpoint> pinned = open_jev_checkpoint(export_file.model_id);
  if (pinned && (export_file.base_revision != pinned->base_revision ||
                 export_file.checkpoint_revision != pinned->checkpoint_revision)) {
    throw checkpoint::LoadError(std::string(open_jev_export_file) + ": base_revision/checkpoint_revision are not the " +
                                std::string(pinned->name) + " pins (" + std::string(pinned->base_revision) + ", " +
                                std::string(pinned->checkpoint_revision) + ")");
  }
  if (pinned) {
    settings.name = std::string(pinned->name);
    settings.aliases = {std::string(pinned->alias), export_file.model_id, "open-jev", "jev-latest"};
    settings.description = std::string(pinned->name) + ": Open-Jev verifier, a trained scalar head per candidate";
  } else {
    settings.description = "Open-Jev verifier on " + export_file.model_id + " (unpinned export)";
  }
  if (auto name = decision_file.optional<std::string>("name")) {
    if (name->empty()) decision_file.reject("name", "must not be empty");
    settings.name = *name;
  } else if (!pinned) {
    decision_file.reject("name", "is required: " + std::string(open_jev_export_file) + " names the base model '" +
                                     export_file.model_id + "', not a pinned Open-Jev checkpoint");
  }
  if (auto aliases = decision_file.optional<std::vector<std::string>>("aliases")) settings.aliases = *aliases;
  std::erase(settings.aliases, settings.name);
  settings.description = decision_file.optional<std::string>("description", settings.description);
  if (auto precision = decision_file.optional<std::string>("precision")) {
    const auto parsed = parse_precision(*precision);
    if (!parsed) decision_file.reject("precision", "must be \"fp32\" or \"bf16\"");
    if (!backend::cpu::linear_supported(*parsed)) decision_file.reject("precision", "bf16 needs a CPU with AMX-BF16");
    settings.precision = *parsed;
  }
  decision_file.finish();
  return settings;
}

std::string open_jev_text(const api::Json& value) {
  if (value.is_string()) return value.get<std::string>();
  return python_sorted_json(value);
}

std::vector<std::string> open_jev_prompts(const api::Json& state, const api::Question& question) {
  // Absent instructions render empty (the reference refuses them; the System One schema allows them).
  std::string instructions = question.instructions.is_null() ? std::string() : open_jev_text(question.instructions);
  if (question.type == api::QuestionType::noul) {
    // The reference writes both lines when criteria give both sides; a side left out gets no line.
    if (!question.noul_true.is_null()) instructions += "\nYes means: " + open_jev_text(question.noul_true);
    if (!question.noul_false.is_null()) instructions += "\nNo means: " + open_jev_text(question.noul_false);
  }
  // The reference trims each body before the chat wrap; it starts with "Context:" and ends with the
  // fixed question, so trimming never changes it.
  const std::string context = "Context:\n" + open_jev_text(state) + "\n\nQuestion: " + instructions + "\n";
  std::vector<std::string> bodies;
  const auto candidate = [&](const std::string& option) {
    bodies.push_back(context + "Proposed answer: " + option + "\n" + std::string(candidate_question));
  };
  switch (question.type) {
    case api::QuestionType::choice:
      for (const api::ChoiceOption& option : question.options) {
        candidate(option.description.is_null() ? option.name : option.name + ": " + open_jev_text(option.description));
      }
      break;
    case api::QuestionType::score:
      for (const api::Json& level : question.levels) candidate(open_jev_text(level));
      break;
    case api::QuestionType::noul:
      bodies.push_back(context + std::string(noul_question));
      break;
  }
  return bodies;
}

float open_jev_head_score(std::span<const float> weight, float bias, std::span<const float> hidden) {
  if (weight.size() != hidden.size()) throw std::invalid_argument("open-jev head: weight and hidden widths differ");
  double sum = 0.0;
  for (std::size_t i = 0; i < weight.size(); ++i) sum += static_cast<double>(weight[i]) * static_cast<double>(hidden[i]);
  return static_cast<float>(sum) + bias;
}

std::vector<double> open_jev_label_scores(api::QuestionType type, std::span<const float> candidate_scores) {
  if (type == api::QuestionType::noul) {
    if (candidate_scores.size() != 1) throw std::invalid_argument("open-jev: a noul question has one candidate");
    return {static_cast<double>(candidate_scores[0]), 0.0};
  }
  return {candidate_scores.begin(), candidate_scores.end()};
}

namespace {

std::size_t candidate_count(const api::Question& question) {
  return question.type == api::QuestionType::noul ? 1 : question.label_count();
}

class OpenJevPlan : public runtime::Plan {
 public:
  SharedPrefixPrompts sequences;  // every candidate of every question, questions in request order
  std::vector<api::QuestionType> types;
  std::vector<std::size_t> candidates;  // per question
};

class OpenJevEngine : public PrefixReusingEngine {
 public:
  OpenJevEngine(const std::filesystem::path& model_dir, OpenJevExport export_file, OpenJevSettings settings)
      : export_(std::move(export_file)),
        settings_(std::move(settings)),
        tokenizer_(text::Tokenizer::from_file(model_dir / "tokenizer.json")),
        decoder_(model::load_causal_decoder(model_dir, settings_.precision)) {
    const decoder::DecoderInfo& model = decoder_->info();
    if (export_.head_weight.size() != model.hidden_size) {
      throw checkpoint::LoadError((model_dir / open_jev_export_file).string() + ": 'head_weight' has " +
                                  std::to_string(export_.head_weight.size()) + " weights; the model's hidden size is " +
                                  std::to_string(model.hidden_size));
    }
    context_tokens_ = std::min(export_.max_length, model.max_positions);
  }

  runtime::ModelInfo info() const override {
    return served_model_info(settings_.description, api::max_choice_options, context_tokens_,
                             confidence_method_name(ConfidenceMethod::linear));
  }

  api::Result<std::unique_ptr<runtime::Plan>> prepare(const api::DecisionRequest& request,
                                                      const runtime::PrepareLimits& limits) const override {
    auto plan = std::make_unique<OpenJevPlan>();
    std::size_t total_candidates = 0;
    for (const api::Question& question : request.questions) {
      plan->types.push_back(question.type);
      plan->candidates.push_back(candidate_count(question));
      total_candidates += plan->candidates.back();
    }
    if (request.questions.size() > open_jev_max_questions || total_candidates > open_jev_max_candidates) {
      return api::ApiError::make(api::ErrorCode::max_tokens_exceeded,
                                 "This model accepts at most 4096 questions and 65536 candidate sequences (one per "
                                 "option or level, one per noul question) per request; this request has " +
                                     std::to_string(request.questions.size()) + " questions and " +
                                     std::to_string(total_candidates) + " candidate sequences");
    }
    std::vector<std::vector<int32_t>> sequences;
    sequences.reserve(total_candidates);
    text::EncodeOptions options;
    options.add_special_tokens = true;  // as the reference encodes; Qwen's tokenizer adds nothing
    for (const api::Question& question : request.questions) {
      for (const std::string& body : open_jev_prompts(request.state, question)) {
        sequences.push_back(tokenizer_.encode(export_.chat_prefix + body + export_.chat_suffix, options).ids);
        if (auto error = check_sequence_fits(static_cast<int64_t>(sequences.back().size()),
                                             static_cast<int64_t>(context_tokens_))) {
          return *error;
        }
      }
    }
    plan->sequences = split_at_shared_prefix(sequences, decoder_->info().prefix_granularity);
    plan->input_tokens = plan->sequences.input_tokens;
    if (auto error = check_request_budget(plan->input_tokens, limits.token_budget)) return *error;
    return std::unique_ptr<runtime::Plan>(std::move(plan));
  }

  api::Result<runtime::RawOutputs> run(runtime::Plan& base_plan) override {
    const auto& plan = static_cast<const OpenJevPlan&>(base_plan);
    const std::vector<std::vector<float>> rows =
        last_token_hidden_rows(*decoder_, plan.sequences, prefix_cache(), &base_plan.cached_tokens);
    std::vector<float> scores;
    scores.reserve(rows.size());
    for (const auto& row : rows) scores.push_back(open_jev_head_score(export_.head_weight, export_.head_bias, row));
    runtime::RawOutputs raw;
    std::size_t next = 0;
    for (std::size_t q = 0; q < plan.candidates.size(); ++q) {
      raw.label_scores.push_back(
          open_jev_label_scores(plan.types[q], std::span<const float>(scores).subspan(next, plan.candidates[q])));
      next += plan.candidates[q];
    }
    return raw;
  }

  api::Result<std::vector<api::Answer>> finish(const api::DecisionRequest& request, const runtime::Plan& /*plan*/,
                                               runtime::RawOutputs outputs) const override {
    std::vector<api::Answer> answers;
    for (std::size_t q = 0; q < request.questions.size(); ++q) {
      // One softmax over all of the question's candidates, at the export's calibrated temperature.
      auto answer = make_answer(request.questions[q].type, outputs.label_scores[q], export_.temperature,
                                ConfidenceMethod::linear);
      if (!answer) return answer.error();
      answers.push_back(std::move(answer.value()));
    }
    return answers;
  }

 private:
  OpenJevExport export_;
  OpenJevSettings settings_;
  text::Tokenizer tokenizer_;
  std::unique_ptr<decoder::CausalDecoder> decoder_;
  std::size_t context_tokens_ = 0;
};

}  // namespace

std::unique_ptr<runtime::Engine> make_open_jev_engine(const std::filesystem::path& model_dir,
                                                      const OpenJevExport& export_file,
                                                      const OpenJevSettings& settings) {
  return std::make_unique<OpenJevEngine>(model_dir, export_file, settings);
}

}  // namespace s1::decide
