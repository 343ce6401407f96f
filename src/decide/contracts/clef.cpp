#include "decide/contracts/clef.h"

#include <algorithm>
#include <stdexcept>

#include "decide/answer_math.h"
#include "decide/contract_common.h"
#include "decide/prompt.h"
#include "decide/token_budget.h"
#include "model/checkpoint/load_error.h"
#include "model/families.h"

namespace s1::decide {
namespace {

using checkpoint::LoadError;

constexpr std::string_view system_message =
    "Read the complete state and schema. Decide every field jointly. Each answer must be exactly one of that "
    "field's allowed options.";
constexpr std::string_view noul_true_description = "The proposition is true or the answer is yes.";
constexpr std::string_view noul_false_description = "The proposition is false or the answer is no.";
constexpr std::string_view suffix_text =
    "\n<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nJOINT SCHEMA DECISIONS:";
// The prefix and suffix alone take dozens of tokens: a smaller limit can hold no record.
constexpr int64_t min_max_length = 64;

std::string render(const api::Json& value) {
  if (value.is_string()) return value.get<std::string>();
  return python_sorted_compact_json(value);
}

heads::JointQuestionType head_type(api::QuestionType type) {
  switch (type) {
    case api::QuestionType::choice:
      return heads::JointQuestionType::choice;
    case api::QuestionType::score:
      return heads::JointQuestionType::score;
    case api::QuestionType::noul:
      break;
  }
  return heads::JointQuestionType::noul;
}

}  // namespace

ClefSettings read_clef_settings(checkpoint::ConfigReader& decision_file) {
  ClefSettings settings;
  settings.precision = default_linear_precision();
  read_served_model_identity(decision_file, settings);
  settings.precision = read_precision(decision_file, settings.precision);
  if (auto limit = decision_file.optional<int64_t>("max_length")) {
    if (*limit < min_max_length) decision_file.reject("max_length", "must be an integer of at least 64");
    settings.max_length = static_cast<std::size_t>(*limit);
  }
  decision_file.finish();
  return settings;
}

std::vector<ClefOption> clef_options(const api::Question& question) {
  std::vector<ClefOption> options;
  switch (question.type) {
    case api::QuestionType::noul:
      options.push_back({"true", question.noul_true.is_null() ? api::Json(noul_true_description) : question.noul_true});
      options.push_back(
          {"false", question.noul_false.is_null() ? api::Json(noul_false_description) : question.noul_false});
      break;
    case api::QuestionType::choice:
      for (const api::ChoiceOption& option : question.options) options.push_back({option.name, option.description});
      // Python sorts str by code point, which is UTF-8's byte order.
      std::ranges::stable_sort(options, {}, &ClefOption::id);
      break;
    case api::QuestionType::score:
      for (std::size_t level = 0; level < question.levels.size(); ++level) {
        options.push_back({std::to_string(level), question.levels[level]});
      }
      break;
  }
  return options;
}

api::Result<ClefPrompt> clef_prompt(const text::Tokenizer& tokenizer, const api::DecisionRequest& request,
                                    std::size_t max_length) {
  auto tokens = [&](std::string_view text) { return encode_without_special_tokens(tokenizer, text); };
  auto append = [](std::vector<int32_t>& to, const std::vector<int32_t>& piece) {
    to.insert(to.end(), piece.begin(), piece.end());
  };
  std::vector<int32_t> schema = tokens("\n\nSCHEMA FIELDS:\n");
  std::vector<heads::JointQuestionLayout> layout;
  for (std::size_t index = 0; index < request.questions.size(); ++index) {
    const api::Question& question = request.questions[index];
    append(schema, tokens("\nFIELD " + std::to_string(index + 1) + "\nID: " + question.key +
                          "\nTYPE: " + std::string(api::question_type_name(question.type)) + "\nINSTRUCTION: "));
    const bool unset = question.instructions.is_null() || (question.instructions.is_string() &&
                                                           question.instructions.get_ref<const std::string&>().empty());
    heads::JointQuestionLayout entry{head_type(question.type), {schema.size(), 0}, {}};
    append(schema, tokens(unset ? question.key : render(question.instructions)));
    entry.question.end = schema.size();
    append(schema, tokens("\nALLOWED OPTIONS:\n"));
    const std::vector<ClefOption> options = clef_options(question);
    for (std::size_t k = 0; k < options.size(); ++k) {
      append(schema, tokens("OPTION " + std::to_string(k + 1) + ": "));
      api::Json semantics = api::Json::object();
      semantics["option_id"] = options[k].id;
      if (!options[k].description.is_null()) semantics["description"] = options[k].description;
      const std::size_t begin = schema.size();
      append(schema, tokens(render(semantics)));
      entry.options.push_back({begin, schema.size()});
      append(schema, tokens("\n"));
    }
    append(schema, tokens("END FIELD\n"));
    layout.push_back(std::move(entry));
  }
  const std::vector<int32_t> prefix =
      tokens("<|im_start|>system\n" + std::string(system_message) + "<|im_end|>\n<|im_start|>user\nSTATE:\n");
  const std::vector<int32_t> suffix = tokens(suffix_text);
  const std::size_t fixed = prefix.size() + schema.size() + suffix.size();
  if (fixed > max_length) {
    return api::ApiError::make(api::ErrorCode::max_tokens_exceeded,
                               "The questions need " + std::to_string(fixed) +
                                   " prompt tokens before the state; the model's prompt holds at most " +
                                   std::to_string(max_length) + " tokens");
  }
  std::vector<int32_t> state = tokens(render(request.state));
  // The reference keeps the state's first tokens: the schema and the decision suffix always stay.
  state.resize(std::min(state.size(), max_length - fixed));
  const std::size_t offset = prefix.size() + state.size();
  for (heads::JointQuestionLayout& entry : layout) {
    entry.question = {entry.question.begin + offset, entry.question.end + offset};
    for (heads::TokenSpan& span : entry.options) span = {span.begin + offset, span.end + offset};
  }
  ClefPrompt prompt;
  prompt.ids = prefix;
  append(prompt.ids, state);
  append(prompt.ids, schema);
  append(prompt.ids, suffix);
  prompt.layout = std::move(layout);
  return prompt;
}

api::Result<api::Answer> clef_answer(const api::Question& question, std::span<const double> head_logits) {
  if (question.type != api::QuestionType::choice) {
    // noul: the head's (true, false) is the answer maths' order; score: levels in order.
    return make_answer(question.type, head_logits, 1.0, ConfidenceMethod::linear);
  }
  const std::vector<ClefOption> sorted = clef_options(question);
  if (head_logits.size() != sorted.size()) throw std::invalid_argument("clef_answer: one logit per option");
  std::vector<double> logits;
  for (const api::ChoiceOption& option : question.options) {
    const auto found = std::ranges::find(sorted, option.name, &ClefOption::id);
    logits.push_back(head_logits[static_cast<std::size_t>(found - sorted.begin())]);
  }
  return make_answer(question.type, logits, 1.0, ConfidenceMethod::linear);
}

namespace {

class ClefPlan : public runtime::Plan {
 public:
  ClefPrompt prompt;
};

class ClefEngine : public runtime::Engine {
 public:
  ClefEngine(const std::filesystem::path& model_dir, ClefSettings settings)
      : settings_(std::move(settings)),
        tokenizer_(text::Tokenizer::from_file(model_dir / "tokenizer.json")),
        decoder_(model::load_causal_decoder(model_dir, settings_.precision)),
        head_(load_head(model_dir, decoder_->info())) {
    if (decoder_->info().family != "qwen3_5") {
      throw LoadError((model_dir / "config.json").string() +
                      ": the clef contract runs a Qwen3.5-family backbone, not " + decoder_->info().family);
    }
    context_tokens_ = std::min(settings_.max_length, decoder_->info().max_positions);
  }

  runtime::ModelInfo info() const override {
    return served_model_info(settings_.description, api::max_choice_options, context_tokens_,
                             confidence_method_name(ConfidenceMethod::linear));
  }

  api::Result<std::unique_ptr<runtime::Plan>> prepare(const api::DecisionRequest& request,
                                                      const runtime::PrepareLimits& limits) const override {
    auto plan = std::make_unique<ClefPlan>();
    auto prompt = clef_prompt(tokenizer_, request, context_tokens_);
    if (!prompt) return prompt.error();
    plan->prompt = std::move(prompt.value());
    plan->input_tokens = static_cast<int64_t>(plan->prompt.ids.size());
    if (auto error = check_request_budget(plan->input_tokens, limits.token_budget)) return *error;
    return std::unique_ptr<runtime::Plan>(std::move(plan));
  }

  api::Result<runtime::RawOutputs> run(runtime::Plan& base_plan) override {
    const auto& plan = static_cast<const ClefPlan&>(base_plan);
    // The head reads every position of one uncached prefill.
    std::vector<std::size_t> positions(plan.prompt.ids.size());
    for (std::size_t i = 0; i < positions.size(); ++i) positions[i] = i;
    const decoder::Branch branch{plan.prompt.ids, positions};
    const auto outputs = decoder_->forward(nullptr, std::span<const decoder::Branch>(&branch, 1), false);
    runtime::RawOutputs raw;
    raw.label_scores = head_.logits(outputs.front().hidden, plan.prompt.ids, plan.prompt.layout, decoder_->lm_head());
    return raw;
  }

  api::Result<std::vector<api::Answer>> finish(const api::DecisionRequest& request, const runtime::Plan& /*plan*/,
                                               runtime::RawOutputs outputs) const override {
    std::vector<api::Answer> answers;
    for (std::size_t q = 0; q < request.questions.size(); ++q) {
      auto answer = clef_answer(request.questions[q], outputs.label_scores[q]);
      if (!answer) return answer.error();
      answers.push_back(std::move(answer.value()));
    }
    return answers;
  }

 private:
  static heads::JointSchemaHead load_head(const std::filesystem::path& model_dir, const decoder::DecoderInfo& model) {
    const std::filesystem::path config_file = model_dir / clef_head_config_file;
    const heads::JointHeadConfig config = heads::read_joint_head_config(config_file);
    if (config.hidden_size != model.hidden_size) {
      throw LoadError(config_file.string() + ": key 'hidden_size' is " + std::to_string(config.hidden_size) +
                      " but the backbone's hidden size is " + std::to_string(model.hidden_size));
    }
    return heads::JointSchemaHead(config, model_dir / clef_head_weights_file);
  }

  ClefSettings settings_;
  text::Tokenizer tokenizer_;
  std::unique_ptr<decoder::CausalDecoder> decoder_;
  heads::JointSchemaHead head_;
  std::size_t context_tokens_ = 0;
};

}  // namespace

std::unique_ptr<runtime::Engine> make_clef_engine(const std::filesystem::path& model_dir,
                                                  const ClefSettings& settings) {
  return std::make_unique<ClefEngine>(model_dir, settings);
}

}  // namespace s1::decide
