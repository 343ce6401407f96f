#include "decide/contracts/cua_s1.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>

#include "decide/answer_math.h"
#include "decide/contract_common.h"
#include "decide/contracts/label_token.h"
#include "decide/prompt.h"
#include "model/checkpoint/load_error.h"
#include "model/families.h"
#include "text/tokenizer.h"

namespace s1::decide {
namespace {

// Upstream's SYSTEM_PROMPT (trycua/cua 0e75660c libs/cua-s1/python/src/cua_s1/four_b.py).
constexpr std::string_view system_message =
    "You are a one-pass computer-use decision model. You are shown the current state of a screen and a fixed, "
    "closed list of candidate (element, action) options, each given a single letter. Choose exactly one option: "
    "the single best next action to take. Answer with ONLY that option's letter -- no words, no punctuation, "
    "no explanation.";

}  // namespace

CuaS1Settings read_cua_s1_settings(checkpoint::ConfigReader& decision_file) {
  return read_identity_precision_and_rounding<CuaS1Settings>(decision_file);
}

std::string_view cua_s1_system_message() { return system_message; }

std::string cua_s1_option_label(const api::ChoiceOption& option) {
  return python_escaped_string_body(option.description.is_null() ? option.name : python_text(option.description));
}

std::vector<text::ChatMessage> cua_s1_messages(const api::Json& state, const api::Question& question) {
  if (question.type != api::QuestionType::choice || question.options.empty() ||
      question.options.size() > cua_s1_max_options) {
    throw std::invalid_argument("Cua-S1 renders choice questions with 1 to 26 options only");
  }
  const std::string goal = question.instructions.is_null() ? std::string() : python_text(question.instructions);
  std::string user;
  if (!goal.empty()) user += "Goal: " + goal + "\n\n";
  user += "App: Cua Driver\nTask family: closed-candidate decision\n\nAccessibility tree:\n";
  user += python_text(state);
  user += "\n\nOptions:\n";
  for (std::size_t i = 0; i < question.options.size(); ++i) {
    if (i > 0) user += '\n';
    user += letter_label(i) + ". Decision \"" + cua_s1_option_label(question.options[i]) + "\" -> select";
  }
  user += "\n\nAnswer with a single letter.";
  return {{"system", std::string(system_message)}, {"user", std::move(user)}};
}

api::Result<api::Answer> cua_s1_answer(std::span<const double> letter_logits, LogitRounding rounding) {
  std::vector<double> scores(letter_logits.begin(), letter_logits.end());
  round_logits(scores, rounding);
  return make_answer(api::QuestionType::choice, scores, 1.0, ConfidenceMethod::entropy);
}

namespace {

class CuaS1Plan : public runtime::Plan {
 public:
  SharedPrefixPrompts prompts;  // one per question
};

class CuaS1Engine : public PrefixReusingEngine {
 public:
  CuaS1Engine(const std::filesystem::path& model_dir, CuaS1Settings settings)
      : settings_(std::move(settings)),
        tokenizer_(text::Tokenizer::from_file(model_dir / "tokenizer.json")),
        chat_template_(text::ChatTemplate::from_model_dir(model_dir)),
        decoder_(model::load_causal_decoder(model_dir, settings_.precision)) {
    const decoder::DecoderInfo& model = decoder_->info();
    context_tokens_ = std::min(cua_s1_max_prompt_tokens, model.max_positions);
    for (std::size_t i = 0; i < cua_s1_max_options; ++i) {
      letter_ids_.push_back(
          require_label_token(tokenizer_, letter_label(i), model.vocab_size, model_dir, cua_s1_contract));
    }
  }

  runtime::ModelInfo info() const override {
    return served_model_info(settings_.description, cua_s1_max_options, context_tokens_,
                             confidence_method_name(ConfidenceMethod::entropy), {api::QuestionType::choice});
  }

  api::Result<std::unique_ptr<runtime::Plan>> prepare(const api::DecisionRequest& request,
                                                      const runtime::PrepareLimits& limits) const override {
    // Contract checks first, over every question in request order (API contract §4.4 step 10).
    for (const api::Question& question : request.questions) {
      if (question.type != api::QuestionType::choice) {
        return api::ApiError::make(api::ErrorCode::unsupported_question_type,
                                   "This model answers only choice questions (Cua-S1 was trained on closed-option "
                                   "choices)");
      }
      if (question.options.size() > cua_s1_max_options) {
        return api::ApiError::make(api::ErrorCode::too_many_options,
                                   "This model accepts at most 26 options per question (letters A to Z)");
      }
    }
    auto prompts = encode_question_prompts(
        request, chat_template_, tokenizer_, text::Thinking::enabled,
        [&](const api::Question& question) { return cua_s1_messages(request.state, question); }, context_tokens_,
        decoder_->info().prefix_granularity, limits.token_budget);
    if (!prompts) return prompts.error();
    auto plan = std::make_unique<CuaS1Plan>();
    plan->prompts = std::move(prompts.value());
    plan->input_tokens = plan->prompts.input_tokens;
    return std::unique_ptr<runtime::Plan>(std::move(plan));
  }

  api::Result<runtime::RawOutputs> run(runtime::Plan& base_plan) override {
    const auto& plan = static_cast<const CuaS1Plan&>(base_plan);
    runtime::RawOutputs raw;
    for (const auto& row : last_token_hidden_rows(*decoder_, plan.prompts, prefix_cache(), &base_plan.cached_tokens)) {
      raw.label_scores.push_back(decoder_->lm_head().gather_logits(row, letter_ids_));
    }
    return raw;
  }

  api::Result<std::vector<api::Answer>> finish(const api::DecisionRequest& request, const runtime::Plan& /*plan*/,
                                               runtime::RawOutputs outputs) const override {
    std::vector<api::Answer> answers;
    for (std::size_t q = 0; q < request.questions.size(); ++q) {
      const std::span<const double> logits(outputs.label_scores[q].data(), request.questions[q].options.size());
      auto answer = cua_s1_answer(logits, settings_.logit_rounding);
      if (!answer) return answer.error();
      answers.push_back(std::move(answer.value()));
    }
    return answers;
  }

 private:
  CuaS1Settings settings_;
  text::Tokenizer tokenizer_;
  text::ChatTemplate chat_template_;
  std::unique_ptr<decoder::CausalDecoder> decoder_;
  std::size_t context_tokens_ = 0;
  std::vector<int32_t> letter_ids_;
};

}  // namespace

std::unique_ptr<runtime::Engine> make_cua_s1_engine(const std::filesystem::path& model_dir,
                                                    const CuaS1Settings& settings) {
  return std::make_unique<CuaS1Engine>(model_dir, settings);
}

}  // namespace s1::decide
