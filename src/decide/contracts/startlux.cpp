#include "decide/contracts/startlux.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>

#include "decide/answer_math.h"
#include "decide/contract_common.h"
#include "decide/contracts/label_token.h"
#include "decide/contracts/startlux_prompt.h"
#include "decide/prompt.h"
#include "decide/token_budget.h"
#include "model/checkpoint/load_error.h"
#include "model/families.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace s1::decide {

double StartLuxDecisionConfig::temperature(api::QuestionType type) const {
  switch (type) {
    case api::QuestionType::choice: return choice_temperature;
    case api::QuestionType::noul: return noul_temperature;
    case api::QuestionType::score: return score_temperature;
  }
  throw std::logic_error("unknown question type");
}

StartLuxDecisionConfig read_startlux_decision_config(const std::filesystem::path& path) {
  checkpoint::ConfigReader file = checkpoint::ConfigReader::from_file(path);
  StartLuxDecisionConfig config;
  const auto letters = file.required<std::vector<int64_t>>("letter_token_ids");
  if (letters.size() != startlux_max_row_options) {
    file.reject("letter_token_ids", "must list the 26 token ids of the letters A to Z");
  }
  for (const int64_t id : letters) {
    if (id < 0 || id > INT32_MAX) file.reject("letter_token_ids", "must hold token ids");
    config.letter_token_ids.push_back(static_cast<int32_t>(id));
  }
  checkpoint::ConfigReader temperatures = file.required_object("temperature_by_type");
  const auto positive = [&](std::string_view type) {
    const double value = temperatures.required<double>(type);
    if (!(value > 0.0) || !std::isfinite(value)) temperatures.reject(type, "must be a finite number above 0");
    return value;
  };
  config.choice_temperature = positive("choice");
  config.noul_temperature = positive("noul");
  config.score_temperature = positive("score");
  temperatures.finish();
  if (auto wide = file.optional_object("wide_choice")) {
    const int64_t group = wide->optional<int64_t>("group", static_cast<int64_t>(config.wide_choice.group));
    const int64_t keep = wide->optional<int64_t>("keep", static_cast<int64_t>(config.wide_choice.keep));
    config.wide_choice.residual = wide->optional<double>("residual", config.wide_choice.residual);
    if (group < 2 || group > static_cast<int64_t>(startlux_max_row_options)) {
      wide->reject("group", "must be between 2 and 26 (one letter per option)");
    }
    if (keep < 1) wide->reject("keep", "must be at least 1");
    if (!(config.wide_choice.residual >= 0.0 && config.wide_choice.residual < 1.0)) {
      wide->reject("residual", "must be in [0, 1)");
    }
    config.wide_choice.group = static_cast<std::size_t>(group);
    config.wide_choice.keep = static_cast<std::size_t>(keep);
    if (!wide_choice_terminates(config.wide_choice, startlux_max_row_options, api::max_choice_options)) {
      wide->reject("keep", "leaves some option counts up to 255 without fewer finalists than options, so the "
                           "rounds would never end");
    }
    wide->finish();
  }
  config.release_date = file.optional<std::string>("release_date");
  file.finish();
  return config;
}

StartLuxSettings read_startlux_settings(checkpoint::ConfigReader& decision_file) {
  StartLuxSettings settings;
  settings.precision = default_linear_precision();
  read_served_model_identity(decision_file, settings);
  settings.precision = read_precision(decision_file, settings.precision);
  const int64_t context = decision_file.optional<int64_t>("context_tokens", 0);
  if (context < 0) decision_file.reject("context_tokens", "must not be negative");
  settings.context_tokens = static_cast<std::size_t>(context);
  decision_file.finish();
  return settings;
}

void check_startlux_variant(std::span<const std::string> names) {
  for (const std::string& name : names) {
    // Words of the name, lowercase, split at anything that is not a letter or digit.
    std::vector<std::string> words(1);
    std::string joined;
    for (const char c : name) {
      if (std::isalnum(static_cast<unsigned char>(c))) {
        const char lower = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        words.back() += lower;
        joined += lower;
      } else if (!words.back().empty()) {
        words.emplace_back();
      }
    }
    if (joined.find("autothink") != std::string::npos) {
      throw checkpoint::LoadError("'" + name + "' names a StartLux-Decision AutoThink variant, which thinks before "
                                  "it answers; the startlux-instant contract serves the Instant variant only "
                                  "(thinking off, answer read at the first token)");
    }
    if (std::find(words.begin(), words.end(), "27b") != words.end()) {
      throw checkpoint::LoadError("'" + name + "' names a StartLux-Decision 27B variant; the startlux-instant "
                                  "contract serves the v1.1 4B Instant checkpoint only");
    }
  }
}

api::Answer startlux_choice_from_probabilities(std::vector<double> probabilities) {
  api::Answer answer;
  answer.type = api::QuestionType::choice;
  answer.probabilities = std::move(probabilities);
  const auto& p = answer.probabilities;
  answer.choice_index = static_cast<std::size_t>(std::max_element(p.begin(), p.end()) - p.begin());
  answer.confidence = linear_confidence(p);
  return answer;
}

namespace {

// How one question is decided.
enum class Route {
  one_row,      // one prompt with every option
  wide_choice,  // more options than letters: rounds
};

class StartLuxPlan : public runtime::Plan {
 public:
  std::string state_text;
  std::vector<StartLuxQuestion> questions;
  std::vector<Route> routes;
  SharedPrefixPrompts prompts;  // the first round: one row per one_row question, the groups of each wide one
};

std::vector<std::size_t> all_positions(std::size_t count) {
  std::vector<std::size_t> positions(count);
  for (std::size_t i = 0; i < count; ++i) positions[i] = i;
  return positions;
}

class StartLuxEngine : public PrefixReusingEngine {
 public:
  StartLuxEngine(const std::filesystem::path& model_dir, StartLuxSettings settings)
      : settings_(std::move(settings)),
        config_(read_startlux_decision_config(model_dir / startlux_decision_file)),
        tokenizer_(text::Tokenizer::from_file(model_dir / "tokenizer.json")),
        chat_template_(text::ChatTemplate::from_model_dir(model_dir)) {
    std::vector<std::string> names = settings_.aliases;
    names.push_back(settings_.name);
    names.push_back(std::filesystem::absolute(model_dir).lexically_normal().filename().string());
    check_startlux_variant(names);
    check_template_and_letters(model_dir);
    decoder_ = model::load_causal_decoder(model_dir, settings_.precision);
    const decoder::DecoderInfo& model = decoder_->info();
    for (const int32_t id : config_.letter_token_ids) {
      if (static_cast<std::size_t>(id) >= model.vocab_size) {
        throw checkpoint::LoadError((model_dir / startlux_decision_file).string() + ": letter_token_ids holds " +
                                    std::to_string(id) + ", outside the model's vocabulary");
      }
    }
    context_tokens_ = settings_.context_tokens == 0 ? model.max_positions
                                                     : std::min(settings_.context_tokens, model.max_positions);
  }

  runtime::ModelInfo info() const override {
    runtime::ModelInfo model = served_model_info(settings_.description, api::max_choice_options, context_tokens_,
                                                 confidence_method_name(ConfidenceMethod::linear));
    model.release_date = config_.release_date;
    return model;
  }

  api::Result<std::unique_ptr<runtime::Plan>> prepare(const api::DecisionRequest& request,
                                                      const runtime::PrepareLimits& limits) const override {
    for (const api::Question& question : request.questions) {
      if (auto refusal = startlux_refusal(question)) return *refusal;
    }
    auto plan = std::make_unique<StartLuxPlan>();
    plan->state_text = startlux_state_text(request.state);
    std::vector<std::vector<int32_t>> rows;
    // Each wide question's text up to "Options:\n": its later rounds list other options after it, so
    // the shared prefix must not reach past it.
    std::vector<std::vector<int32_t>> wide_heads;
    for (const api::Question& question : request.questions) {
      StartLuxQuestion record = startlux_question(question);
      Route route = Route::one_row;
      if (record.options.size() > startlux_max_row_options) {
        route = Route::wide_choice;
        const WideChoice rounds(record.options.size(), startlux_max_row_options, config_.wide_choice);
        for (const auto& row : rounds.rows()) rows.push_back(tokens(plan->state_text, record, row));
        wide_heads.push_back(tokens(plan->state_text, record, {}));
      } else {
        rows.push_back(tokens(plan->state_text, record, all_positions(record.options.size())));
      }
      plan->questions.push_back(std::move(record));
      plan->routes.push_back(route);
    }
    for (const auto& row : rows) {
      if (auto error = check_sequence_fits(static_cast<int64_t>(row.size()), static_cast<int64_t>(context_tokens_))) {
        return *error;
      }
    }
    std::vector<std::vector<int32_t>> sharing = rows;
    sharing.insert(sharing.end(), wide_heads.begin(), wide_heads.end());
    plan->prompts = split_at_prefix_length(rows, shared_prefix_length(sharing, decoder_->info().prefix_granularity));
    plan->input_tokens = plan->prompts.input_tokens;
    if (auto error = check_request_budget(plan->input_tokens, limits.token_budget)) return *error;
    return std::unique_ptr<runtime::Plan>(std::move(plan));
  }

  api::Result<runtime::RawOutputs> run(runtime::Plan& base_plan) override {
    const auto& plan = static_cast<const StartLuxPlan&>(base_plan);
    runtime::RawOutputs raw;
    raw.label_scores.resize(plan.questions.size());
    std::shared_ptr<const memory::SequenceMemory> prefix;
    std::vector<std::vector<float>> first_rows;
    if (plan.prompts.prefix.empty()) {
      // No shared prefix: a single row may still start with a cached prefix; later rounds run whole.
      first_rows = last_token_hidden_rows(*decoder_, plan.prompts, prefix_cache(), &base_plan.cached_tokens);
    } else {
      prefix = prefix_memory(*decoder_, plan.prompts.prefix, prefix_cache(), base_plan.cached_tokens);
      first_rows = last_token_hidden_rows(*decoder_, prefix.get(), plan.prompts.suffixes);
    }

    std::vector<std::optional<WideChoice>> wide(plan.questions.size());
    std::size_t next_row = 0;
    for (std::size_t q = 0; q < plan.questions.size(); ++q) {
      const StartLuxQuestion& question = plan.questions[q];
      if (plan.routes[q] == Route::one_row) {
        raw.label_scores[q] = letter_logits(first_rows[next_row++], question.options.size());
      } else if (plan.routes[q] == Route::wide_choice) {
        wide[q].emplace(question.options.size(), startlux_max_row_options, config_.wide_choice);
        std::vector<std::vector<double>> round;
        for (const auto& row : wide[q]->rows()) {
          auto probabilities = softmax(letter_logits(first_rows[next_row++], row.size()), config_.choice_temperature);
          if (probabilities.empty()) return non_finite();
          round.push_back(std::move(probabilities));
        }
        wide[q]->advance(round);
      }
    }
    // Later rounds of the wide questions, all questions' rows of a round as one batch from the same state.
    while (std::any_of(wide.begin(), wide.end(), [](const auto& w) { return w && !w->finished(); })) {
      std::vector<std::vector<int32_t>> prompts;
      for (std::size_t q = 0; q < wide.size(); ++q) {
        if (!wide[q] || wide[q]->finished()) continue;
        for (const auto& row : wide[q]->rows()) {
          prompts.push_back(tokens(plan.state_text, plan.questions[q], row));
          if (auto error = check_sequence_fits(static_cast<int64_t>(prompts.back().size()),
                                               static_cast<int64_t>(context_tokens_))) {
            return *error;
          }
        }
      }
      const auto round_rows = branch_rows(plan.prompts.prefix, prefix.get(), prompts);
      std::size_t row_index = 0;
      for (std::size_t q = 0; q < wide.size(); ++q) {
        if (!wide[q] || wide[q]->finished()) continue;
        std::vector<std::vector<double>> round;
        for (const auto& row : wide[q]->rows()) {
          auto probabilities = softmax(letter_logits(round_rows[row_index++], row.size()), config_.choice_temperature);
          if (probabilities.empty()) return non_finite();
          round.push_back(std::move(probabilities));
        }
        wide[q]->advance(round);
      }
    }
    for (std::size_t q = 0; q < wide.size(); ++q) {
      if (wide[q]) raw.label_scores[q] = wide[q]->probabilities();
    }
    return raw;
  }

  api::Result<std::vector<api::Answer>> finish(const api::DecisionRequest& request, const runtime::Plan& base_plan,
                                               runtime::RawOutputs outputs) const override {
    const auto& plan = static_cast<const StartLuxPlan&>(base_plan);
    std::vector<api::Answer> answers;
    for (std::size_t q = 0; q < request.questions.size(); ++q) {
      switch (plan.routes[q]) {
        case Route::wide_choice:
          answers.push_back(startlux_choice_from_probabilities(std::move(outputs.label_scores[q])));
          break;
        case Route::one_row: {
          const api::QuestionType type = request.questions[q].type;
          auto answer = make_answer(type, outputs.label_scores[q], config_.temperature(type), ConfidenceMethod::linear);
          if (!answer) return answer.error();
          answers.push_back(std::move(answer.value()));
          break;
        }
      }
    }
    return answers;
  }

 private:
  static api::ApiError non_finite() {
    return api::ApiError::make(api::ErrorCode::internal_error, "The model produced a non-finite label score");
  }

  std::vector<int32_t> tokens(const std::string& state_text, const StartLuxQuestion& question,
                              std::span<const std::size_t> order) const {
    const std::string prompt = chat_template_.render(startlux_messages(state_text, question, order), true,
                                                     text::Thinking::disabled);
    return encode_without_special_tokens(tokenizer_, prompt);
  }

  // The letter rows of the first `count` letters dotted with one hidden row, in fp32 rows with double
  // accumulation (the reference multiplies the hidden state by fp32 copies of the rows).
  std::vector<double> letter_logits(std::span<const float> hidden, std::size_t count) const {
    return decoder_->lm_head().gather_logits(hidden, std::span<const int32_t>(config_.letter_token_ids).first(count));
  }

  // A later round's prompts branched from the first round's prefix state; a prompt that does not start
  // with that prefix (a tokenizer that merges across "Options:\n") sends the round through whole.
  std::vector<std::vector<float>> branch_rows(const std::vector<int32_t>& prefix_tokens,
                                              const memory::SequenceMemory* prefix,
                                              const std::vector<std::vector<int32_t>>& prompts) {
    const bool extends_prefix = std::all_of(prompts.begin(), prompts.end(), [&](const std::vector<int32_t>& prompt) {
      return prompt.size() > prefix_tokens.size() && std::equal(prefix_tokens.begin(), prefix_tokens.end(), prompt.begin());
    });
    if (!extends_prefix) return last_token_hidden_rows(*decoder_, nullptr, prompts);
    return last_token_hidden_rows(*decoder_, prefix, split_at_prefix_length(prompts, prefix_tokens.size()).suffixes);
  }

  // The reference's load checks (jevfmt.check_tokenizer): the template renders the thinking-off
  // assistant prefix, and each letter is one token, the one decision_config.json names, that stays
  // separate right after that prefix.
  void check_template_and_letters(const std::filesystem::path& model_dir) const {
    api::Question probe;
    probe.type = api::QuestionType::noul;
    probe.instructions = "q";
    const StartLuxQuestion record = startlux_question(probe);
    const std::string text = chat_template_.render(startlux_messages("s", record, all_positions(2)), true,
                                                   text::Thinking::disabled);
    if (!text.ends_with(startlux_thinking_off_suffix)) {
      throw checkpoint::LoadError(model_dir.string() + ": the chat template (" + std::string(chat_template_.name()) +
                                  ") has no thinking switch: with thinking off it does not end the prompt with "
                                  "the empty <think></think> block this model is read after");
    }
    const std::vector<int32_t> prompt = encode_without_special_tokens(tokenizer_, text);
    for (std::size_t i = 0; i < startlux_max_row_options; ++i) {
      const std::string letter = letter_label(i);
      const std::vector<int32_t> alone = encode_without_special_tokens(tokenizer_, letter);
      std::vector<int32_t> expected = prompt;
      expected.insert(expected.end(), alone.begin(), alone.end());
      if (alone.size() != 1 || encode_without_special_tokens(tokenizer_, text + letter) != expected) {
        throw checkpoint::LoadError((model_dir / "tokenizer.json").string() + ": the letter '" + letter +
                                    "' is not one token that stays separate after the prompt");
      }
      if (alone.front() != config_.letter_token_ids[i]) {
        throw checkpoint::LoadError((model_dir / startlux_decision_file).string() + ": letter_token_ids[" +
                                    std::to_string(i) + "] is " + std::to_string(config_.letter_token_ids[i]) +
                                    " but tokenizer.json encodes '" + letter + "' as " +
                                    std::to_string(alone.front()));
      }
    }
  }

  StartLuxSettings settings_;
  StartLuxDecisionConfig config_;
  text::Tokenizer tokenizer_;
  text::ChatTemplate chat_template_;
  std::unique_ptr<decoder::CausalDecoder> decoder_;
  std::size_t context_tokens_ = 0;
};

}  // namespace

std::unique_ptr<runtime::Engine> make_startlux_engine(const std::filesystem::path& model_dir,
                                                      const StartLuxSettings& settings) {
  return std::make_unique<StartLuxEngine>(model_dir, settings);
}

}  // namespace s1::decide
