#include "decide/contracts/lfm2_candidates.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "decide/answer_math.h"
#include "decide/contract_common.h"
#include "decide/contracts/label_token.h"
#include "decide/prompt.h"
#include "decide/token_budget.h"
#include "model/families.h"
#include "model/decoder/readout.h"
#include "text/tokenizer.h"

namespace s1::decide {
namespace {

// engine.py's system message before the schema, byte for byte.
constexpr std::string_view instruction =
    "Extract the attributes from the text. Return only a JSON object matching this schema. Use the exact allowed "
    "values. No explanation or markdown.\n";
// The reference builds one fixed field per question.
constexpr std::string_view field = "answer";
constexpr std::string_view prompt_tail = "{\n";
constexpr std::string_view field_suffix = "  \"answer\": ";

}  // namespace

Lfm2CandidatesSettings read_lfm2_candidates_settings(checkpoint::ConfigReader& decision_file) {
  Lfm2CandidatesSettings settings;
  settings.precision = default_linear_precision();
  read_served_model_identity(decision_file, settings);
  settings.precision = read_precision(decision_file, settings.precision);
  if (auto batch = decision_file.optional<int64_t>("candidate_batch_size")) {
    if (*batch < 1) decision_file.reject("candidate_batch_size", "must be a positive integer");
    settings.candidate_batch_size = static_cast<std::size_t>(*batch);
  }
  decision_file.finish();
  return settings;
}

std::string lfm2_candidates_schema(const api::Question& question) {
  api::Json criteria = api::Json::object();
  api::Json names = api::Json::array();
  for (const api::ChoiceOption& option : question.options) {
    criteria[option.name] = option.description;
    names.push_back(option.name);
  }
  api::Json description = api::Json::object();
  description["instructions"] = question.instructions;
  description["criteria"] = std::move(criteria);
  api::Json answer = api::Json::object();
  answer["type"] = "string";
  answer["description"] = python_json(description);
  answer["enum"] = std::move(names);
  api::Json schema = api::Json::object();
  schema["type"] = "object";
  schema["properties"] = api::Json::object();
  schema["properties"][std::string(field)] = std::move(answer);
  schema["required"] = api::Json::array({std::string(field)});
  schema["additionalProperties"] = false;
  return python_json(schema);
}

std::vector<text::ChatMessage> lfm2_candidates_messages(const api::Json& state, const api::Question& question) {
  if (question.type != api::QuestionType::choice || question.options.empty() ||
      question.options.size() > lfm2_candidates_max_options) {
    throw std::invalid_argument("LFM2.5 candidate likelihood renders choice questions with 1 to 255 options only");
  }
  return {{"system", std::string(instruction) + lfm2_candidates_schema(question)}, {"user", python_text(state)}};
}

std::string_view lfm2_candidates_prompt_tail() { return prompt_tail; }
std::string_view lfm2_candidates_field_suffix() { return field_suffix; }

std::string lfm2_candidates_value(const api::ChoiceOption& option) {
  return python_json(api::Json(option.name)) + "\n";
}

api::Result<api::Answer> lfm2_candidates_answer(std::span<const double> log_likelihoods) {
  return make_answer(api::QuestionType::choice, log_likelihoods, 1.0, ConfidenceMethod::entropy);
}

namespace {

struct QuestionTokens {
  std::vector<int32_t> prompt;
  std::vector<std::vector<int32_t>> values;  // per option
};

class Lfm2CandidatesPlan : public runtime::Plan {
 public:
  std::vector<QuestionTokens> questions;
};

class Lfm2CandidatesEngine : public PrefixReusingEngine {
 public:
  Lfm2CandidatesEngine(const std::filesystem::path& model_dir, Lfm2CandidatesSettings settings)
      : settings_(std::move(settings)),
        tokenizer_(text::Tokenizer::from_file(model_dir / "tokenizer.json")),
        chat_template_(text::ChatTemplate::from_model_dir(model_dir)),
        decoder_(model::load_causal_decoder(model_dir, settings_.precision)) {
    suffix_ = encode_without_special_tokens(tokenizer_, field_suffix);
  }

  runtime::ModelInfo info() const override {
    return served_model_info(settings_.description, lfm2_candidates_max_options, decoder_->info().max_positions,
                             confidence_method_name(ConfidenceMethod::entropy), {api::QuestionType::choice});
  }

  api::Result<std::unique_ptr<runtime::Plan>> prepare(const api::DecisionRequest& request,
                                                      const runtime::PrepareLimits& limits) const override {
    for (const api::Question& question : request.questions) {
      if (question.type != api::QuestionType::choice) {
        return api::ApiError::make(api::ErrorCode::unsupported_question_type,
                                   "This model answers only choice questions (it scores each option's value)");
      }
      if (question.options.size() > lfm2_candidates_max_options) {
        return api::ApiError::make(api::ErrorCode::too_many_options, "This model accepts at most 255 options");
      }
    }
    auto plan = std::make_unique<Lfm2CandidatesPlan>();
    for (const api::Question& question : request.questions) {
      QuestionTokens tokens;
      const std::string prompt =
          chat_template_.render(lfm2_candidates_messages(request.state, question), true, text::Thinking::disabled) +
          std::string(prompt_tail);
      tokens.prompt = encode_without_special_tokens(tokenizer_, prompt);
      std::size_t longest = 0;
      for (const api::ChoiceOption& option : question.options) {
        tokens.values.push_back(encode_without_special_tokens(tokenizer_, lfm2_candidates_value(option)));
        longest = std::max(longest, tokens.values.back().size());
        plan->input_tokens += static_cast<int64_t>(suffix_.size() + tokens.values.back().size());
      }
      plan->input_tokens += static_cast<int64_t>(tokens.prompt.size());
      if (auto error = check_sequence_fits(static_cast<int64_t>(tokens.prompt.size() + suffix_.size() + longest),
                                           static_cast<int64_t>(decoder_->info().max_positions))) {
        return *error;
      }
      plan->questions.push_back(std::move(tokens));
    }
    if (auto error = check_request_budget(plan->input_tokens, limits.token_budget)) return *error;
    return std::unique_ptr<runtime::Plan>(std::move(plan));
  }

  api::Result<runtime::RawOutputs> run(runtime::Plan& base_plan) override {
    const auto& plan = static_cast<const Lfm2CandidatesPlan&>(base_plan);
    runtime::RawOutputs raw;
    for (const QuestionTokens& question : plan.questions) {
      // Each question's prompt is its own prefix (its schema is in the system turn, before the state).
      int64_t reused = 0;
      const auto prefix = prefix_memory(*decoder_, question.prompt, prefix_cache(), reused);
      base_plan.cached_tokens += reused;
      std::vector<double> scores;
      for (std::size_t first = 0; first < question.values.size(); first += settings_.candidate_batch_size) {
        const std::size_t count = std::min(settings_.candidate_batch_size, question.values.size() - first);
        append_scores(*prefix, std::span(question.values).subspan(first, count), scores);
      }
      raw.label_scores.push_back(std::move(scores));
    }
    return raw;
  }

  api::Result<std::vector<api::Answer>> finish(const api::DecisionRequest& request, const runtime::Plan& /*plan*/,
                                               runtime::RawOutputs outputs) const override {
    std::vector<api::Answer> answers;
    for (std::size_t q = 0; q < request.questions.size(); ++q) {
      auto answer = lfm2_candidates_answer(outputs.label_scores[q]);
      if (!answer) return answer.error();
      answers.push_back(std::move(answer.value()));
    }
    return answers;
  }

 private:
  // One batch of option branches after the question's prefix: suffix + value tokens each, reading
  // the hidden rows that predict the value tokens (the last suffix token's row onwards).
  void append_scores(const memory::SequenceMemory& prefix, std::span<const std::vector<int32_t>> values,
                     std::vector<double>& scores) {
    std::vector<std::vector<int32_t>> tokens;
    std::vector<std::vector<std::size_t>> positions;
    for (const std::vector<int32_t>& value : values) {
      tokens.push_back(suffix_);
      tokens.back().insert(tokens.back().end(), value.begin(), value.end());
      positions.emplace_back(value.size());
      for (std::size_t i = 0; i < value.size(); ++i) positions.back()[i] = suffix_.size() - 1 + i;
    }
    std::vector<decoder::Branch> branches;
    for (std::size_t b = 0; b < values.size(); ++b) branches.push_back({tokens[b], positions[b]});
    const auto outputs = decoder_->forward(&prefix, branches, false);
    const std::size_t vocab = decoder_->info().vocab_size;
    for (std::size_t b = 0; b < values.size(); ++b) {
      const std::vector<float> logits = decoder_->lm_head().all_logits(outputs[b].hidden);
      scores.push_back(decoder::sequence_log_likelihood(logits, vocab, values[b]));
    }
  }

  Lfm2CandidatesSettings settings_;
  text::Tokenizer tokenizer_;
  text::ChatTemplate chat_template_;
  std::unique_ptr<decoder::CausalDecoder> decoder_;
  std::vector<int32_t> suffix_;
};

}  // namespace

std::unique_ptr<runtime::Engine> make_lfm2_candidates_engine(const std::filesystem::path& model_dir,
                                                             const Lfm2CandidatesSettings& settings) {
  return std::make_unique<Lfm2CandidatesEngine>(model_dir, settings);
}

}  // namespace s1::decide
