#include "decide/contracts/clm.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "decide/answer_math.h"
#include "decide/contract_common.h"
#include "decide/contracts/embedding_cache.h"
#include "decide/contracts/label_token.h"
#include "decide/python_text.h"
#include "decide/token_budget.h"
#include "model/checkpoint/load_error.h"
#include "model/families.h"
#include "model/heads/clm_head.h"
#include "model/heads/unit_rows.h"
#include "text/tokenizer.h"

namespace s1::decide {
namespace {

bool is_nonempty_container(const api::Json& value) {
  return (value.is_object() || value.is_array()) && !value.empty();
}

void append_text(std::string& out, const api::Json& value, std::size_t indent) {
  switch (value.type()) {
    case api::Json::value_t::string: out += value.get_ref<const std::string&>(); return;
    case api::Json::value_t::boolean: out += value.get<bool>() ? "true" : "false"; return;
    case api::Json::value_t::number_integer:
    case api::Json::value_t::number_unsigned:
    case api::Json::value_t::number_float: out += python_str(value); return;
    case api::Json::value_t::object: {
      const std::string pad(indent, ' ');
      bool first = true;
      for (const auto& [key, element] : value.items()) {
        if (!first) out += indent == 0 ? "\n\n" : "\n";
        first = false;
        out += pad + key;
        if (is_nonempty_container(element)) {
          out += ":\n";
          append_text(out, element, indent + 2);
        } else {
          out += ": ";
          append_text(out, element, 0);
        }
      }
      return;
    }
    case api::Json::value_t::array: {
      const std::string pad(indent, ' ');
      bool first = true;
      for (const auto& element : value) {
        if (!first) out += '\n';
        first = false;
        out += pad;
        if (is_nonempty_container(element)) {
          out += "-\n";
          append_text(out, element, indent + 2);
        } else {
          out += "- ";
          append_text(out, element, 0);
        }
      }
      return;
    }
    default: return;  // null renders nothing
  }
}

// clm.schema treats a null or "" description as absent (an empty object or array is present and
// renders empty).
bool is_absent_description(const api::Json& value) {
  return value.is_null() || (value.is_string() && value.get_ref<const std::string&>().empty());
}

std::string noul_text(std::string_view side, const api::Json& description, const std::string& instructions) {
  std::string body;
  if (!is_absent_description(description)) {
    body = clm_to_text(description);
  } else if (instructions.empty()) {
    body = side;
  } else {
    body = (side == "true" ? "Yes. This is true: " : "No. This is false: ") + instructions;
  }
  return std::string(side) + ": " + body;
}

}  // namespace

ClmSettings read_clm_settings(checkpoint::ConfigReader& decision_file) {
  ClmSettings settings;
  settings.precision = default_linear_precision();
  read_served_model_identity(decision_file, settings);
  settings.precision = read_precision(decision_file, settings.precision);
  settings.heads_file = decision_file.optional<std::string>("heads_file", settings.heads_file);
  if (settings.heads_file.empty()) decision_file.reject("heads_file", "must name the converted heads file");
  settings.logit_scale = decision_file.required<double>("logit_scale");
  if (!std::isfinite(settings.logit_scale)) decision_file.reject("logit_scale", "must be a finite number");
  settings.max_scale = decision_file.optional<double>("max_scale", settings.max_scale);
  if (!(settings.max_scale > 0.0) || !std::isfinite(settings.max_scale)) {
    decision_file.reject("max_scale", "must be a positive number");
  }
  settings.head_residual = decision_file.optional<bool>("head_residual", false);
  settings.temperature = decision_file.optional<double>("temperature", 1.0);
  if (!(settings.temperature > 0.0 && settings.temperature <= 100.0)) {
    decision_file.reject("temperature", "must be in (0, 100], as the reference engine accepts");
  }
  const int64_t max_tokens = decision_file.optional<int64_t>("max_text_tokens", 2048);
  if (max_tokens < 1) decision_file.reject("max_text_tokens", "must be at least 1");
  settings.max_text_tokens = static_cast<std::size_t>(max_tokens);
  settings.append_token = decision_file.optional<std::string>("append_token");
  const int64_t cache = decision_file.optional<int64_t>("candidate_cache_entries", 4096);
  if (cache < 0) decision_file.reject("candidate_cache_entries", "must be 0 or more");
  settings.candidate_cache_entries = static_cast<std::size_t>(cache);
  decision_file.finish();
  return settings;
}

std::string clm_to_text(const api::Json& value) {
  std::string out;
  append_text(out, value, 0);
  return out;
}

std::string clm_state_text(const api::Json& state, const api::Json& instructions) {
  const std::string context(python_strip(clm_to_text(state)));
  const std::string question(python_strip(clm_to_text(instructions)));
  if (!context.empty() && !question.empty()) return context + "\n\n" + question;
  return context.empty() ? question : context;
}

std::vector<std::string> clm_candidate_texts(const api::Question& question) {
  std::vector<std::string> texts;
  switch (question.type) {
    case api::QuestionType::choice:
      for (const api::ChoiceOption& option : question.options) {
        texts.push_back(is_absent_description(option.description) ? option.name : clm_to_text(option.description));
      }
      break;
    case api::QuestionType::score:
      for (const api::Json& level : question.levels) texts.push_back(clm_to_text(level));
      break;
    case api::QuestionType::noul: {
      const std::string instructions(python_strip(clm_to_text(question.instructions)));
      texts.push_back(noul_text("true", question.noul_true, instructions));
      texts.push_back(noul_text("false", question.noul_false, instructions));
      break;
    }
  }
  return texts;
}

double clm_scale(double logit_scale, double max_scale) { return std::min(std::exp(logit_scale), max_scale); }

api::Result<api::Answer> clm_answer(api::QuestionType type, std::span<const double> cosines, double scale,
                                    double temperature) {
  std::vector<double> logits(cosines.begin(), cosines.end());
  for (double& logit : logits) logit = scale * logit / temperature;
  return make_answer(type, logits, 1.0, ConfidenceMethod::top_minus_mean);
}

namespace {

class ClmPlan : public runtime::Plan {
 public:
  SharedPrefixPrompts states;                        // one per question
  std::vector<std::string> texts;                    // distinct candidate texts of the request
  std::vector<std::vector<int32_t>> text_ids;        // their token ids
  std::vector<std::vector<std::size_t>> question_labels;  // per question: indices into texts, label order
};

class ClmEngine : public PrefixReusingEngine {
 public:
  ClmEngine(const std::filesystem::path& model_dir, ClmSettings settings)
      : settings_(std::move(settings)),
        tokenizer_(text::Tokenizer::from_file(model_dir / "tokenizer.json")),
        decoder_(model::load_causal_decoder(model_dir, settings_.precision)),
        heads_(heads::load_clm_heads(model_dir / settings_.heads_file, decoder_->info().hidden_size,
                                     settings_.head_residual)),
        scale_(clm_scale(settings_.logit_scale, settings_.max_scale)),
        cache_(settings_.candidate_cache_entries) {
    const decoder::DecoderInfo& model = decoder_->info();
    if (model.family != "qwen3") {
      throw checkpoint::LoadError((model_dir / "config.json").string() + ": model_type '" + model.family +
                                  "' is not the dense Qwen3 the clm contract embeds with");
    }
    context_tokens_ = std::min(settings_.max_text_tokens, model.max_positions);
    if (settings_.append_token) {
      const auto id = tokenizer_.token_to_id(*settings_.append_token);
      if (!id || static_cast<std::size_t>(*id) >= model.vocab_size) {
        throw checkpoint::LoadError((model_dir / "s1serve.json").string() + ": append_token '" +
                                    *settings_.append_token + "' is not a token of tokenizer.json within the vocabulary");
      }
      append_id_ = *id;
    }
  }

  runtime::ModelInfo info() const override {
    return served_model_info(settings_.description, api::max_choice_options, context_tokens_,
                             confidence_method_name(ConfidenceMethod::top_minus_mean));
  }

  api::Result<std::unique_ptr<runtime::Plan>> prepare(const api::DecisionRequest& request,
                                                      const runtime::PrepareLimits& limits) const override {
    auto plan = std::make_unique<ClmPlan>();
    std::vector<std::vector<int32_t>> states;
    std::unordered_map<std::string, std::size_t> seen;
    int64_t candidate_tokens = 0;
    for (const api::Question& question : request.questions) {
      auto state = tokens_of(clm_state_text(request.state, question.instructions), {"state"});
      if (!state) return state.error();
      states.push_back(std::move(state.value()));
      std::vector<std::size_t> labels;
      std::vector<std::string> texts = clm_candidate_texts(question);
      for (std::size_t label = 0; label < texts.size(); ++label) {
        auto [found, inserted] = seen.try_emplace(texts[label], plan->texts.size());
        if (inserted) {
          auto ids = tokens_of(texts[label], criterion_location(question, label));
          if (!ids) return ids.error();
          candidate_tokens += static_cast<int64_t>(ids->size());
          plan->text_ids.push_back(std::move(ids.value()));
          plan->texts.push_back(std::move(texts[label]));
        }
        labels.push_back(found->second);
      }
      plan->question_labels.push_back(std::move(labels));
    }
    plan->states = split_at_shared_prefix(states, decoder_->info().prefix_granularity);
    plan->input_tokens = plan->states.input_tokens + candidate_tokens;
    if (auto error = check_request_budget(plan->input_tokens, limits.token_budget)) return *error;
    return std::unique_ptr<runtime::Plan>(std::move(plan));
  }

  api::Result<runtime::RawOutputs> run(runtime::Plan& base_plan) override {
    const auto& plan = static_cast<const ClmPlan&>(base_plan);
    const std::vector<float> states =
        heads_.state.project(embeddings(plan.states, prefix_cache(), &base_plan.cached_tokens));
    const std::size_t width = heads_.state.output_size();

    // This request's projected candidates, copied out of the cache so that evictions made by this
    // very request (a cache smaller than the request) cannot invalidate them.
    std::vector<float> candidates(plan.texts.size() * width);
    SharedPrefixPrompts missing;  // each text alone: no prefix
    std::vector<std::size_t> missing_index;
    for (std::size_t i = 0; i < plan.texts.size(); ++i) {
      if (const std::vector<float>* cached = cache_.find(plan.texts[i])) {
        std::copy(cached->begin(), cached->end(), candidates.begin() + static_cast<ptrdiff_t>(i * width));
      } else {
        missing.suffixes.push_back(plan.text_ids[i]);
        missing_index.push_back(i);
      }
    }
    if (!missing.suffixes.empty()) {
      const std::vector<float> projected = heads_.action.project(embeddings(missing));
      for (std::size_t m = 0; m < missing_index.size(); ++m) {
        const auto row = projected.begin() + static_cast<ptrdiff_t>(m * width);
        std::copy(row, row + static_cast<ptrdiff_t>(width),
                  candidates.begin() + static_cast<ptrdiff_t>(missing_index[m] * width));
        cache_.insert(plan.texts[missing_index[m]], std::vector<float>(row, row + static_cast<ptrdiff_t>(width)));
      }
    }

    runtime::RawOutputs raw;
    for (std::size_t q = 0; q < plan.question_labels.size(); ++q) {
      const std::span<const float> state = std::span<const float>(states).subspan(q * width, width);
      std::vector<double> cosines;
      for (const std::size_t label : plan.question_labels[q]) {
        cosines.push_back(unit_vector_dot(state, std::span<const float>(candidates).subspan(label * width, width)));
      }
      raw.label_scores.push_back(std::move(cosines));
    }
    return raw;
  }

  api::Result<std::vector<api::Answer>> finish(const api::DecisionRequest& request, const runtime::Plan& /*plan*/,
                                               runtime::RawOutputs outputs) const override {
    std::vector<api::Answer> answers;
    for (std::size_t q = 0; q < request.questions.size(); ++q) {
      auto answer = clm_answer(request.questions[q].type, outputs.label_scores[q], scale_, settings_.temperature);
      if (!answer) return answer.error();
      answers.push_back(std::move(answer.value()));
    }
    return answers;
  }

 private:
  static api::Location criterion_location(const api::Question& question, std::size_t label) {
    api::Location location{"questions", question.key, "criteria"};
    switch (question.type) {
      case api::QuestionType::choice: location.emplace_back(question.options[label].name); break;
      case api::QuestionType::score: location.emplace_back(static_cast<int64_t>(label)); break;
      case api::QuestionType::noul: location.emplace_back(label == 0 ? "true" : "false"); break;
    }
    return location;
  }

  // A text's token ids as the encoder sees them; a 422 for a text with nothing to embed, a 400 for
  // one longer than the encoder's window.
  api::Result<std::vector<int32_t>> tokens_of(const std::string& text, api::Location location) const {
    if (text.empty()) {
      return api::ApiError::validation({{"value_error", std::move(location),
                                         "This model embeds this value as text, and it renders empty"}});
    }
    std::vector<int32_t> ids = tokenizer_.encode(text).ids;
    if (append_id_) ids.push_back(*append_id_);
    if (auto error = check_sequence_fits(static_cast<int64_t>(ids.size()), static_cast<int64_t>(context_tokens_))) {
      return *error;
    }
    return ids;
  }

  // The L2-normalised final-norm hidden state at the last token of every prompt, [n, hidden]; the
  // states' prefix may come from the prefix cache, candidate texts (each embedded alone) never do.
  std::vector<float> embeddings(const SharedPrefixPrompts& prompts, runtime::PrefixCache* cache = nullptr,
                                int64_t* cached_tokens = nullptr) {
    std::vector<float> rows;
    for (const std::vector<float>& row : last_token_hidden_rows(*decoder_, prompts, cache, cached_tokens)) {
      rows.insert(rows.end(), row.begin(), row.end());
    }
    heads::l2_normalize_rows(rows, decoder_->info().hidden_size);
    return rows;
  }

  ClmSettings settings_;
  text::Tokenizer tokenizer_;
  std::unique_ptr<decoder::CausalDecoder> decoder_;
  heads::ClmHeads heads_;
  double scale_;
  EmbeddingCache cache_;
  std::size_t context_tokens_ = 0;
  std::optional<int32_t> append_id_;
};

}  // namespace

std::unique_ptr<runtime::Engine> make_clm_engine(const std::filesystem::path& model_dir, const ClmSettings& settings) {
  return std::make_unique<ClmEngine>(model_dir, settings);
}

}  // namespace s1::decide
