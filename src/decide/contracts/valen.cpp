#include "decide/contracts/valen.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <span>

#include "decide/answer_math.h"
#include "decide/prompt.h"
#include "decide/python_text.h"
#include "decide/token_budget.h"
#include "model/checkpoint/load_error.h"
#include "model/decoder/causal_decoder.h"
#include "model/families.h"
#include "model/heads/bilinear_head.h"
#include "text/chat_template.h"

namespace s1::decide {
namespace {

// What system1-omni's protocol.py blocks besides the tokenizer's own special tokens.
constexpr std::array<std::string_view, 4> vision_tokens{"<|image_pad|>", "<|video_pad|>", "<|vision_start|>",
                                                        "<|vision_end|>"};
constexpr std::array<std::string_view, 7> named_special_tokens{"bos_token", "eos_token", "unk_token", "sep_token",
                                                               "pad_token", "cls_token", "mask_token"};

std::size_t code_points(std::string_view text) {
  return static_cast<std::size_t>(std::ranges::count_if(text, [](char c) { return (c & 0xC0) != 0x80; }));
}

api::ApiError refusal(api::Location location, std::string message) {
  return api::ApiError::validation({api::ValidationIssue{"value_error", std::move(location), std::move(message)}});
}

// A text as the reference's _text() makes it: refused past 16,384 characters or holding a control token.
api::Result<std::string> checked_text(const api::Json& value, const std::vector<std::string>& reserved,
                                      api::Location location) {
  std::string text = python_text(value);
  if (code_points(text) > valen_max_text_characters) {
    return refusal(std::move(location), "Valen reads at most 16384 characters here");
  }
  for (const std::string& token : reserved) {
    if (text.find(token) != std::string::npos) {
      return refusal(std::move(location), "This text holds the tokenizer control token " + token);
    }
  }
  return text;
}

std::optional<std::string> special_token_text(const api::Json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("content") && value["content"].is_string()) {
    return value["content"].get<std::string>();
  }
  return std::nullopt;
}

}  // namespace

ValenSettings read_valen_settings(checkpoint::ConfigReader& decision_file) {
  ValenSettings settings;
  read_served_model_identity(decision_file, settings);
  settings.precision = read_precision(decision_file, default_linear_precision());
  decision_file.finish();
  return settings;
}

std::vector<std::string> valen_reserved_tokens(const std::filesystem::path& model_dir) {
  std::vector<std::string> reserved(vision_tokens.begin(), vision_tokens.end());
  const std::filesystem::path path = model_dir / "tokenizer_config.json";
  std::ifstream in(path);
  if (!in) throw checkpoint::LoadError(path.string() + ": cannot read the tokenizer's special tokens");
  const api::Json config = api::Json::parse(in, nullptr, false);
  if (config.is_discarded() || !config.is_object()) throw checkpoint::LoadError(path.string() + ": not a JSON object");
  const auto add = [&](const api::Json& value) {
    if (auto token = special_token_text(value); token && !token->empty()) reserved.push_back(*token);
  };
  for (std::string_view name : named_special_tokens) {
    if (config.contains(name)) add(config[name]);
  }
  for (const char* list : {"additional_special_tokens", "extra_special_tokens"}) {
    if (config.contains(list) && config[list].is_array()) {
      for (const api::Json& value : config[list]) add(value);
    }
  }
  return reserved;
}

api::Result<std::string> valen_state_text(const api::Json& state, const std::vector<std::string>& reserved) {
  if (state.is_object() && state.contains("image")) {
    return api::ApiError::make(api::ErrorCode::unsupported_media,
                               "Valen's image state ({\"image\": …}) is not served yet: s1serve does not run "
                               "Valen's vision tower; send the state as text");
  }
  auto text = checked_text(state, reserved, {"state"});
  if (!text) return text;
  if (python_strip(text.value()).empty()) return refusal({"state"}, "Valen needs a state that is not blank");
  return text;
}

api::Result<ValenBranch> valen_branch(const text::Tokenizer& tokenizer, const api::Question& question,
                                      const std::vector<std::string>& reserved) {
  const api::Location at{"questions", question.key};
  const auto location = [&](std::initializer_list<api::LocationPart> parts) {
    api::Location full = at;
    full.insert(full.end(), parts);
    return full;
  };
  if (question.instructions.is_null()) return refusal(location({"instructions"}), "Valen needs instructions");
  auto instructions = checked_text(question.instructions, reserved, location({"instructions"}));
  if (!instructions) return instructions.error();
  if (python_strip(instructions.value()).empty()) {
    return refusal(location({"instructions"}), "Valen needs instructions that are not blank");
  }
  ValenBranch branch;
  const auto append = [&](std::string_view piece) {
    const std::vector<int32_t> ids = encode_without_special_tokens(tokenizer, piece);
    branch.tokens.insert(branch.tokens.end(), ids.begin(), ids.end());
  };
  append("<|im_start|>user\n");
  append("Task: choice\nQuestion: " + instructions.value() + "\nCandidates:\n");
  std::size_t characters = code_points(instructions.value());
  for (const api::ChoiceOption& option : question.options) {
    const api::Location where = location({"criteria", option.name});
    for (const std::string& token : reserved) {
      if (option.name.find(token) != std::string::npos) {
        return refusal(where, "This option name holds the tokenizer control token " + token);
      }
    }
    std::string description = option.name;
    if (!option.description.is_null()) {
      auto text = checked_text(option.description, reserved, where);
      if (!text) return text.error();
      description = std::move(text.value());
    }
    if (python_strip(description).empty()) return refusal(where, "Valen needs a description that is not blank");
    characters += code_points(description);
    append(option.name + ": " + description);
    branch.endpoints.push_back(branch.tokens.size() - 1);
    append("\n");
  }
  if (characters > valen_max_text_characters) {
    return refusal(at, "Valen reads at most 16384 characters of instructions and descriptions per question");
  }
  append("Decision:");
  return branch;
}

namespace {

class ValenPlan : public runtime::Plan {
 public:
  std::vector<int32_t> prefix;                    // the state's tokens run once
  std::vector<std::vector<int32_t>> branches;     // per question: the rest of the state, then its suffix
  std::vector<std::vector<std::size_t>> outputs;  // per question: endpoints, then the Decision position
};

class ValenEngine : public runtime::Engine {
 public:
  ValenEngine(const std::filesystem::path& model_dir, ValenSettings settings)
      : settings_(std::move(settings)),
        tokenizer_(text::Tokenizer::from_file(model_dir / "tokenizer.json")),
        chat_template_(text::ChatTemplate::from_model_dir(model_dir)),
        reserved_(valen_reserved_tokens(model_dir)),
        decoder_(model::load_causal_decoder(model_dir, settings_.precision)),
        head_(heads::BilinearHead::from_file(model_dir / valen_head_file, "head.decision.weight",
                                             "head.candidate.weight", decoder_->info().hidden_size)) {
    context_tokens_ = std::min(valen_max_length, decoder_->info().max_positions);
  }

  runtime::ModelInfo info() const override {
    return served_model_info(settings_.description, api::max_choice_options, context_tokens_,
                             confidence_method_name(ConfidenceMethod::linear), {api::QuestionType::choice});
  }

  api::Result<std::unique_ptr<runtime::Plan>> prepare(const api::DecisionRequest& request,
                                                      const runtime::PrepareLimits& limits) const override {
    for (const api::Question& question : request.questions) {
      if (question.type != api::QuestionType::choice) {
        return api::ApiError::make(api::ErrorCode::unsupported_question_type,
                                   "This model answers only choice questions (Valen scores named candidates)");
      }
    }
    if (request.questions.size() > valen_max_questions) {
      return api::ApiError::make(api::ErrorCode::payload_too_large,
                                 "This model answers at most 8 questions per request");
    }
    auto state = valen_state_text(request.state, reserved_);
    if (!state) return state.error();
    const std::array messages{text::ChatMessage{"user", state.value()}};
    const std::vector<int32_t> base =
        encode_without_special_tokens(tokenizer_, chat_template_.render(messages, false, text::Thinking::enabled));
    auto plan = std::make_unique<ValenPlan>();
    // The hybrid's chunk grid: a prefix of whole 64-token chunks keeps each branch's grid its own.
    const std::size_t granularity = decoder_->info().prefix_granularity;
    const std::size_t shared = base.size() / granularity * granularity;
    plan->prefix.assign(base.begin(), base.begin() + static_cast<std::ptrdiff_t>(shared));
    int64_t logical = static_cast<int64_t>(base.size());
    for (const api::Question& question : request.questions) {
      auto branch = valen_branch(tokenizer_, question, reserved_);
      if (!branch) return branch.error();
      const std::size_t length = base.size() + branch.value().tokens.size();
      if (auto error = check_sequence_fits(static_cast<int64_t>(length), static_cast<int64_t>(context_tokens_))) {
        return *error;
      }
      logical += static_cast<int64_t>(branch.value().tokens.size());
      std::vector<int32_t> tokens(base.begin() + static_cast<std::ptrdiff_t>(shared), base.end());
      tokens.insert(tokens.end(), branch.value().tokens.begin(), branch.value().tokens.end());
      const std::size_t offset = base.size() - shared;
      std::vector<std::size_t> outputs;
      for (const std::size_t endpoint : branch.value().endpoints) outputs.push_back(offset + endpoint);
      outputs.push_back(tokens.size() - 1);
      plan->branches.push_back(std::move(tokens));
      plan->outputs.push_back(std::move(outputs));
    }
    plan->input_tokens = logical;
    if (auto error = check_request_budget(plan->input_tokens, limits.token_budget)) return *error;
    return std::unique_ptr<runtime::Plan>(std::move(plan));
  }

  api::Result<runtime::RawOutputs> run(runtime::Plan& base_plan) override {
    const auto& plan = static_cast<const ValenPlan&>(base_plan);
    std::unique_ptr<memory::SequenceMemory> prefix;
    if (!plan.prefix.empty()) prefix = decoder_->run_prefix(plan.prefix);
    std::vector<decoder::Branch> branches;
    for (std::size_t q = 0; q < plan.branches.size(); ++q) branches.push_back({plan.branches[q], plan.outputs[q]});
    const std::size_t hidden = decoder_->info().hidden_size;
    runtime::RawOutputs raw;
    for (const decoder::BranchOutput& output : decoder_->forward(prefix.get(), branches, false)) {
      const std::span<const float> rows(output.hidden);
      const std::size_t candidates = rows.size() / hidden - 1;
      const std::vector<float> logits =
          head_.logits(rows.subspan(candidates * hidden, hidden), rows.first(candidates * hidden));
      raw.label_scores.emplace_back(logits.begin(), logits.end());
    }
    return raw;
  }

  api::Result<std::vector<api::Answer>> finish(const api::DecisionRequest& request, const runtime::Plan& /*plan*/,
                                               runtime::RawOutputs outputs) const override {
    std::vector<api::Answer> answers;
    for (std::size_t q = 0; q < request.questions.size(); ++q) {
      // The reference's plain softmax (temperature 1) and Valen's own choice confidence, which is
      // the linear method: 1 for one candidate, (p_max − 1/K)/(1 − 1/K) otherwise.
      auto answer = make_answer(api::QuestionType::choice, outputs.label_scores[q], 1.0, ConfidenceMethod::linear);
      if (!answer) return answer.error();
      answers.push_back(std::move(answer.value()));
    }
    return answers;
  }

 private:
  ValenSettings settings_;
  text::Tokenizer tokenizer_;
  text::ChatTemplate chat_template_;
  std::vector<std::string> reserved_;
  std::unique_ptr<decoder::CausalDecoder> decoder_;
  heads::BilinearHead head_;
  std::size_t context_tokens_ = 0;
};

}  // namespace

std::unique_ptr<runtime::Engine> make_valen_engine(const std::filesystem::path& model_dir,
                                                   const ValenSettings& settings) {
  return std::make_unique<ValenEngine>(model_dir, settings);
}

}  // namespace s1::decide
