#include "decide/gguf_decision.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <stdexcept>
#include <utility>

#include "decide/answer_math.h"
#include "decide/contract_common.h"
#include "decide/token_budget.h"
#include "model/checkpoint/load_error.h"
#include "text/jinja_value.h"

namespace s1::decide {
namespace {

constexpr std::array<std::pair<GgufDecisionType, std::string_view>, 5> kTypeNames{{
    {GgufDecisionType::openjev, "openjev"},
    {GgufDecisionType::lev, "lev"},
    {GgufDecisionType::nimble, "nimble"},
    {GgufDecisionType::pplx_decider, "pplx-decider"},
    {GgufDecisionType::lfm2_d1, "lfm2-d1"},
}};

// lev reads a noul question as a rating: 0 certainly no … 8 certainly yes.
constexpr std::size_t kLevRatings = 9;
// llama.cpp's cap on label codes (and on options of the types without a label list).
constexpr std::size_t kMaxLabels = 255;

// An option as the template sees it: key and description in the order the model was trained with.
struct ShownOption {
  std::string key;
  api::Json description;
};

struct Ask {
  api::QuestionType type = api::QuestionType::noul;
  std::vector<ShownOption> options;
};

// One prompt of a question (a variant) and where its answer is read.
struct Readout {
  std::size_t prompt = 0;
  std::vector<std::size_t> group_sizes;  // lfm2-d1: labels per option; empty: one label per output
};

struct QuestionPlan {
  Ask ask;
  std::vector<Readout> variants;
};

class GgufDecisionPlan : public runtime::Plan {
 public:
  SharedPrefixPrompts prompts;
  std::vector<std::vector<int32_t>> prompt_labels;  // per prompt, the label ids whose logits are read
  std::vector<QuestionPlan> questions;
};

api::Json sorted_keys(const api::Json& value) {
  if (value.is_array()) {
    api::Json out = api::Json::array();
    for (const auto& item : value) out.push_back(sorted_keys(item));
    return out;
  }
  if (!value.is_object()) return value;
  std::vector<std::pair<std::string, api::Json>> items;
  for (const auto& [key, item] : value.items()) items.emplace_back(key, sorted_keys(item));
  std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  api::Json out = api::Json::object();
  for (auto& [key, item] : items) out[key] = std::move(item);
  return out;
}

std::string two_digits(std::size_t value) {
  std::array<char, 24> text{};
  std::snprintf(text.data(), text.size(), "%02zu", value);
  return text.data();
}

class GgufDecisionEngine : public PrefixReusingEngine {
 public:
  GgufDecisionEngine(ChatDecoder model, GgufDecisionSettings settings)
      : settings_(std::move(settings)),
        tokenizer_(std::move(model.tokenizer)),
        template_(std::move(model.chat_template)),
        decoder_(std::move(model.decoder)) {
    const decoder::DecoderInfo& info = decoder_->info();
    context_tokens_ =
        settings_.context_tokens == 0 ? info.max_positions : std::min(settings_.context_tokens, info.max_positions);
    const auto fail = [&](const std::string& what) {
      throw checkpoint::LoadError(model.tokenizer_source + ": " + what + ", so the " +
                                  std::string(gguf_decision_type_name(settings_.type)) +
                                  " decision type cannot read its answers");
    };
    switch (settings_.type) {
      case GgufDecisionType::openjev:
        for (const char c : std::string_view("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")) {
          const auto id = single_token(std::string(1, c));
          if (!id) fail(std::string("the label '") + c + "' is not a single token");
          labels_.push_back(*id);
        }
        options_max_ = labels_.size();
        break;
      case GgufDecisionType::lev:
      case GgufDecisionType::nimble:
      case GgufDecisionType::pplx_decider:
        for (std::size_t i = 0; i < 26 + 26 * 26 && labels_.size() < kMaxLabels; ++i) {
          const std::string code =
              i < 26 ? std::string(1, static_cast<char>('A' + i))
                     : std::string{static_cast<char>('A' + (i - 26) / 26), static_cast<char>('A' + (i - 26) % 26)};
          if (const auto id = single_token(code)) {
            labels_.push_back(*id);
            label_texts_.push_back(code);
          }
        }
        if (labels_.size() < (settings_.type == GgufDecisionType::lev ? kLevRatings : 2)) {
          fail("too few of the labels A…Z, AA…ZZ are single tokens");
        }
        options_max_ = labels_.size();
        break;
      case GgufDecisionType::lfm2_d1:
        for (std::size_t level = 0; level < api::max_score_levels; ++level) {
          if (single_tokens({std::to_string(level)}).empty()) {
            fail("the label '" + std::to_string(level) + "' is not a single token");
          }
        }
        if (single_tokens({"yes", "Yes", "YES"}).empty() || single_tokens({"no", "No", "NO"}).empty()) {
          fail("neither yes, Yes nor YES (or no, No, NO) is a single token");
        }
        options_max_ = kMaxLabels;
        break;
    }
  }

  runtime::ModelInfo info() const override {
    return served_model_info(settings_.description, std::min(options_max_, api::max_choice_options), context_tokens_,
                             confidence_method_name(ConfidenceMethod::linear));
  }

  api::Result<std::unique_ptr<runtime::Plan>> prepare(const api::DecisionRequest& request,
                                                      const runtime::PrepareLimits& limits) const override {
    auto plan = std::make_unique<GgufDecisionPlan>();
    std::vector<Ask> asks;
    for (const api::Question& question : request.questions) {
      asks.push_back(ask_of(question));
      if (asks.back().options.size() > options_max_) {
        return api::ApiError::make(api::ErrorCode::too_many_options,
                                   "This model accepts at most " + std::to_string(options_max_) +
                                       " options per question (each label must be a single token)");
      }
    }
    std::vector<std::vector<int32_t>> prompts;
    for (std::size_t q = 0; q < asks.size(); ++q) {
      QuestionPlan question{asks[q], {}};
      for (std::size_t variant = 0; variant < variant_count(question.ask); ++variant) {
        Readout readout{prompts.size(), {}};
        std::vector<int32_t> label_ids;
        std::vector<std::string> d1_texts;
        if (settings_.type == GgufDecisionType::lfm2_d1) {
          std::vector<std::vector<int32_t>> groups;
          if (auto error = d1_labels(question.ask, d1_texts, groups)) return *error;
          for (const auto& group : groups) {
            label_ids.insert(label_ids.end(), group.begin(), group.end());
            readout.group_sizes.push_back(group.size());
          }
        } else {
          label_ids.assign(labels_.begin(), labels_.begin() + static_cast<ptrdiff_t>(output_count(question.ask)));
        }
        const std::string prompt = render(request, asks, q, variant, d1_texts);
        auto encoded = encode_prompt_within(tokenizer_, prompt, context_tokens_);
        if (!encoded) return encoded.error();
        prompts.push_back(std::move(encoded.value()));
        plan->prompt_labels.push_back(std::move(label_ids));
        question.variants.push_back(std::move(readout));
      }
      plan->questions.push_back(std::move(question));
    }
    plan->prompts = split_at_shared_prefix(prompts, decoder_->info().prefix_granularity);
    plan->input_tokens = plan->prompts.input_tokens;
    if (auto error = check_request_budget(plan->input_tokens, limits.token_budget)) return *error;
    return std::unique_ptr<runtime::Plan>(std::move(plan));
  }

  api::Result<runtime::RawOutputs> run(runtime::Plan& base_plan) override {
    const auto& plan = static_cast<const GgufDecisionPlan&>(base_plan);
    const auto rows = last_token_hidden_rows(*decoder_, plan.prompts, prefix_cache(), &base_plan.cached_tokens);
    runtime::RawOutputs raw;
    for (std::size_t p = 0; p < rows.size(); ++p) {
      raw.label_scores.push_back(decoder_->lm_head().gather_logits(rows[p], plan.prompt_labels[p]));
    }
    return raw;
  }

  api::Result<std::vector<api::Answer>> finish(const api::DecisionRequest& /*request*/, const runtime::Plan& base_plan,
                                               runtime::RawOutputs outputs) const override {
    const auto& plan = static_cast<const GgufDecisionPlan&>(base_plan);
    std::vector<api::Answer> answers;
    for (const QuestionPlan& question : plan.questions) {
      auto answer = answer_of(question, outputs);
      if (!answer) return answer.error();
      answers.push_back(std::move(answer.value()));
    }
    return answers;
  }

 private:
  std::optional<int32_t> single_token(const std::string& text) const {
    const std::vector<int32_t> ids = encode_without_special_tokens(tokenizer_, text);
    if (ids.size() != 1 || ids.front() < 0 || static_cast<std::size_t>(ids.front()) >= decoder_->info().vocab_size) {
      return std::nullopt;
    }
    return ids.front();
  }

  // The distinct single tokens among `forms`, in order.
  std::vector<int32_t> single_tokens(std::initializer_list<std::string> forms) const {
    std::vector<int32_t> out;
    for (const std::string& form : forms) {
      const auto id = single_token(form);
      if (id && std::find(out.begin(), out.end(), *id) == out.end()) out.push_back(*id);
    }
    return out;
  }

  bool noul_true_first() const {
    return settings_.type == GgufDecisionType::openjev || settings_.type == GgufDecisionType::lfm2_d1;
  }

  Ask ask_of(const api::Question& question) const {
    Ask ask{question.type, {}};
    switch (question.type) {
      case api::QuestionType::choice:
        for (const auto& option : question.options) ask.options.push_back({option.name, option.description});
        break;
      case api::QuestionType::score:
        for (std::size_t i = 0; i < question.levels.size(); ++i) {
          ask.options.push_back({std::to_string(i), question.levels[i]});
        }
        break;
      case api::QuestionType::noul:
        ask.options = {{"false", question.noul_false}, {"true", question.noul_true}};
        if (noul_true_first()) std::swap(ask.options[0], ask.options[1]);
        break;
    }
    return ask;
  }

  // lev shows a choice's options in both orders, to cancel its preference for the first label.
  std::size_t variant_count(const Ask& ask) const {
    return settings_.type == GgufDecisionType::lev && ask.type == api::QuestionType::choice && ask.options.size() > 1
               ? 2
               : 1;
  }

  std::size_t output_count(const Ask& ask) const {
    return settings_.type == GgufDecisionType::lev && ask.type == api::QuestionType::noul ? kLevRatings
                                                                                          : ask.options.size();
  }

  // lfm2-d1's labels as the model's prompt.py picks them: the option's own letter, else A… (or 00…
  // past 26 options), else the first free code of a fixed pool; each group adds the spaced form.
  std::optional<api::ApiError> d1_labels(const Ask& ask, std::vector<std::string>& texts,
                                         std::vector<std::vector<int32_t>>& groups) const {
    if (ask.type != api::QuestionType::choice) {
      for (const ShownOption& option : ask.options) {
        groups.push_back(ask.type == api::QuestionType::score ? single_tokens({option.key})
                         : option.key == "true"               ? single_tokens({"yes", "Yes", "YES"})
                                                              : single_tokens({"no", "No", "NO"}));
        texts.push_back(option.key);
      }
      return std::nullopt;
    }
    const std::size_t n = ask.options.size();
    const bool letters = std::all_of(ask.options.begin(), ask.options.end(), [](const ShownOption& option) {
      return option.key.size() == 1 && std::isalpha(static_cast<unsigned char>(option.key[0]));
    });
    std::vector<std::string> pool;
    for (char c = 'A'; c <= 'Z'; ++c) pool.emplace_back(1, c);
    for (std::size_t i = 0; i < 100; ++i) pool.push_back(two_digits(i));
    for (char c = 'a'; c <= 'z'; ++c) pool.emplace_back(1, c);
    for (int i = 0; i < 200; ++i) pool.push_back("#" + std::to_string(i));
    for (char a = 'A'; a <= 'Z'; ++a) {
      for (char b = 'A'; b <= 'Z'; ++b) pool.push_back(std::string{a, b});
    }
    std::vector<int32_t> used;
    const auto take = [&](const std::string& code) {
      const auto id = single_token(code);
      if (!id || std::find(used.begin(), used.end(), *id) != used.end()) return false;
      used.push_back(*id);
      std::vector<int32_t> group{*id};
      for (const int32_t spaced : single_tokens({" " + code})) {
        if (spaced != *id) group.push_back(spaced);
      }
      texts.push_back(code);
      groups.push_back(std::move(group));
      return true;
    };
    for (std::size_t i = 0; i < n; ++i) {
      const std::string code = letters   ? ask.options[i].key
                               : n <= 26 ? std::string(1, static_cast<char>('A' + i))
                                         : two_digits(i);
      bool taken = take(code);
      for (std::size_t p = 0; !taken && p < pool.size(); ++p) taken = take(pool[p]);
      if (!taken) {
        return api::ApiError::make(api::ErrorCode::too_many_options,
                                   "No single-token label is left for " + std::to_string(n) + " options");
      }
    }
    return std::nullopt;
  }

  api::Json options_json(const Ask& ask, std::size_t variant, const std::vector<std::string>& d1_texts) const {
    const std::size_t n = ask.options.size();
    api::Json options = api::Json::array();
    for (std::size_t i = 0; i < n; ++i) {
      const ShownOption& option = ask.options[variant == 0 ? i : n - 1 - i];
      api::Json shown = {{"key", option.key}, {"description", option.description}};
      if (!label_texts_.empty()) shown["label"] = label_texts_[i];
      if (!d1_texts.empty()) shown["label"] = d1_texts[i];
      options.push_back(std::move(shown));
    }
    return options;
  }

  std::string render(const api::DecisionRequest& request, const std::vector<Ask>& asks, std::size_t q,
                     std::size_t variant, const std::vector<std::string>& d1_texts) const {
    const api::Question& question = request.questions[q];
    api::Json input = {{"id", question.key},
                       {"type", std::string(api::question_type_name(question.type))},
                       {"instructions", question.instructions},
                       {"state", request.state},
                       {"options", options_json(asks[q], variant, d1_texts)}};
    if (settings_.type == GgufDecisionType::nimble) {
      api::Json all = api::Json::array();
      for (std::size_t other = 0; other < asks.size(); ++other) {
        const api::Question& listed = request.questions[other];
        all.push_back({{"id", listed.key},
                       {"type", std::string(api::question_type_name(listed.type))},
                       {"instructions", listed.instructions},
                       {"options", options_json(asks[other], 0, {})}});
      }
      input["questions"] = std::move(all);
    }
    // lev was trained on inputs with sorted keys.
    if (settings_.type == GgufDecisionType::lev) input = sorted_keys(input);
    input["images"] = api::Json::array();
    const text::jinja::Value variables = text::jinja::Value::from_json(input);
    return template_.render(variables.dict());
  }

  api::Result<api::Answer> answer_of(const QuestionPlan& question, const runtime::RawOutputs& outputs) const {
    const Ask& ask = question.ask;
    const std::size_t n = output_count(ask);
    const double temperature = gguf_decision_temperature(settings_, ask.type, ask.options.size());
    std::vector<double> probabilities(n, 0.0);
    const double share = 1.0 / static_cast<double>(question.variants.size());
    for (std::size_t v = 0; v < question.variants.size(); ++v) {
      const Readout& readout = question.variants[v];
      std::vector<double> scores = outputs.label_scores[readout.prompt];
      if (!readout.group_sizes.empty()) {
        // A label group scores as its best-scoring spelling.
        std::vector<double> grouped;
        std::size_t begin = 0;
        for (const std::size_t size : readout.group_sizes) {
          grouped.push_back(*std::max_element(scores.begin() + static_cast<ptrdiff_t>(begin),
                                              scores.begin() + static_cast<ptrdiff_t>(begin + size)));
          begin += size;
        }
        scores = std::move(grouped);
      }
      const std::vector<double> p = softmax(scores, temperature);
      if (p.size() != n) {
        return api::ApiError::make(api::ErrorCode::internal_error, "The model produced a non-finite label score");
      }
      // The second variant showed the options reversed.
      for (std::size_t i = 0; i < n; ++i) probabilities[v == 0 ? i : n - 1 - i] += p[i] * share;
    }
    api::Answer answer;
    answer.type = ask.type;
    switch (ask.type) {
      case api::QuestionType::noul: {
        double yes = 0.0;
        if (settings_.type == GgufDecisionType::lev) {
          for (std::size_t i = 0; i < n; ++i) yes += probabilities[i] * static_cast<double>(i) / (n - 1);
        } else {
          for (std::size_t i = 0; i < n; ++i) {
            if (ask.options[i].key == "true") yes = probabilities[i];
          }
        }
        yes = std::clamp(yes, 0.0, 1.0);
        answer.probabilities = {yes, 1.0 - yes};
        break;
      }
      case api::QuestionType::choice:
        answer.probabilities = probabilities;
        answer.choice_index = static_cast<std::size_t>(std::max_element(probabilities.begin(), probabilities.end()) -
                                                       probabilities.begin());
        answer.confidence = linear_confidence(probabilities);
        break;
      case api::QuestionType::score:
        for (std::size_t i = 0; i < n; ++i) answer.score += static_cast<double>(i) * probabilities[i];
        answer.probabilities = probabilities;
        answer.confidence = score_confidence(probabilities);
        break;
    }
    return answer;
  }

  GgufDecisionSettings settings_;
  text::Tokenizer tokenizer_;
  text::ChatTemplate template_;
  std::unique_ptr<decoder::CausalDecoder> decoder_;
  std::size_t context_tokens_ = 0;
  std::size_t options_max_ = 0;
  std::vector<int32_t> labels_;
  std::vector<std::string> label_texts_;  // given to the template as each option's "label"
};

}  // namespace

std::optional<GgufDecisionType> gguf_decision_type_named(std::string_view name) {
  for (const auto& [type, type_name] : kTypeNames) {
    if (type_name == name) return type;
  }
  return std::nullopt;
}

std::string_view gguf_decision_type_name(GgufDecisionType type) {
  for (const auto& [known, type_name] : kTypeNames) {
    if (known == type) return type_name;
  }
  throw std::logic_error("unknown GGUF decision type");
}

double gguf_decision_temperature(const GgufDecisionSettings& settings, api::QuestionType type,
                                 std::size_t option_count) {
  // The buckets are those the temperatures were fitted on.
  const std::size_t n = option_count;
  const std::string bucket = settings.type == GgufDecisionType::lev ? (n <= 8    ? "small"
                                                                       : n <= 26 ? "mid"
                                                                                 : "large")
                                                                    : (n <= 2    ? "2"
                                                                       : n <= 5  ? "3_5"
                                                                       : n <= 10 ? "6_10"
                                                                                 : "11");
  const std::string type_name(api::question_type_name(type));
  for (const std::string& key : {type_name + "." + bucket, type_name}) {
    if (const auto found = settings.temperatures.find(key); found != settings.temperatures.end()) {
      return found->second;
    }
  }
  return 1.0;
}

std::unique_ptr<runtime::Engine> make_gguf_decision_engine(ChatDecoder model, GgufDecisionSettings settings) {
  return std::make_unique<GgufDecisionEngine>(std::move(model), std::move(settings));
}

}  // namespace s1::decide
