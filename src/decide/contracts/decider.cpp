#include "decide/contracts/decider.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <set>
#include <stdexcept>

#include "decide/answer_math.h"
#include "decide/contract_common.h"
#include "decide/contracts/label_token.h"
#include "decide/prompt.h"
#include "decide/token_budget.h"
#include "model/checkpoint/load_error.h"
#include "model/families.h"
#include "text/unicode.h"
#include "text/utf8.h"

namespace s1::decide {
namespace {

// Token ids of A…Z, AA…JT (two-letter combinations that are not one token are skipped) in the
// Decider-2B v11 tokenizer (Mapika/decider-2b 533964da), as the reference fixture pins them.
constexpr std::array<int32_t, decider_label_count> pinned_label_ids = {
    32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47,
    48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 5840, 1803, 1646, 1745, 13276, 8018,
    1825, 28946, 15015, 29595, 11568, 939, 1354, 1058, 18183, 2456, 88898, 905, 1846, 802, 33869, 7839,
    14006, 2860, 2926, 22828, 6844, 9798, 4738, 9265, 11261, 19278, 36513, 93801, 8335, 14544, 85266, 9110,
    28000, 15137, 4525, 25261, 12717, 7116, 17078, 14497, 57339, 74909, 52072, 19305, 4887, 12607, 3580, 6281,
    2036, 9362, 8533, 2080, 10911, 2925, 3040, 9690, 27731, 8023, 6901, 8702, 6211, 1123, 16307, 18990,
    64045, 63037, 33380, 6151, 3392, 5449, 3967, 1113, 5095, 51923, 49600, 17099, 51483, 17756, 16037, 8135,
    30237, 5683, 9992, 7444, 5751, 10284, 20887, 59884, 52396, 16103, 67547, 18535, 8006, 7263, 1425, 6878,
    14453, 9097, 44072, 76089, 68720, 2662, 2629, 923, 6548, 8924, 52194, 622, 1515, 1300, 37523, 44473,
    36530, 3152, 93924, 3505, 15731, 6542, 14176, 11091, 1686, 11660, 80440, 18836, 26132, 5934, 24794, 40229,
    3660, 11361, 10191, 8225, 3860, 78413, 17680, 15900, 78138, 15653, 5213, 22150, 39500, 10460, 35131, 21563,
    43194, 27127, 3697, 20011, 24368, 15058, 23658, 8362, 16035, 24583, 52857, 38403, 60456, 81519, 40097, 16522,
    29722, 21756, 18567, 1736, 48043, 87013, 22456, 23165, 55523, 13097, 50397, 41741, 23073, 6401, 86538, 16585,
    11622, 2464, 84982, 75516, 36984, 58795, 47217, 59675, 5681, 3151, 1271, 887, 5203, 2685, 1849, 72470,
    5370, 74063, 27629, 1655, 1728, 669, 3682, 3191, 59865, 2712, 1580, 922, 77243, 2990, 78493, 5228,
    2750, 42711, 44568, 56402, 48236, 38993, 43559, 61250, 32942, 86302, 25310, 26313, 81770, 12185, 78382,
};

constexpr int64_t annotate_min_length = 8;
constexpr std::string_view noul_without_instructions = "Which answer fits the context?";


// The reference's test for "no description": None or "".
bool is_blank(const api::Json& value) { return value.is_null() || (value.is_string() && value.get<std::string>().empty()); }

api::ApiError unsupported(std::string message) {
  return api::ApiError::make(api::ErrorCode::unsupported_question_type, std::move(message));
}

}  // namespace

std::span<const int32_t> decider_label_token_ids() { return pinned_label_ids; }

DeciderSettings read_decider_settings(checkpoint::ConfigReader& decision_file) {
  DeciderSettings settings;
  settings.precision = default_linear_precision();
  settings.label_token_ids.assign(pinned_label_ids.begin(), pinned_label_ids.end());
  read_served_model_identity(decision_file, settings);
  settings.precision = read_precision(decision_file, settings.precision);
  settings.logit_rounding = read_logit_rounding(decision_file, settings.logit_rounding);
  if (auto temperatures = decision_file.optional_object("temperatures")) {
    const auto read = [&](std::string_view type, double fallback) {
      const double value = temperatures->optional<double>(type, fallback);
      if (!(value > 0.0) || !std::isfinite(value)) temperatures->reject(type, "must be a finite number above 0");
      return value;
    };
    settings.temperatures.choice = read("choice", settings.temperatures.choice);
    settings.temperatures.noul = read("noul", settings.temperatures.noul);
    settings.temperatures.score = read("score", settings.temperatures.score);
    temperatures->finish();
  }
  if (auto ids = decision_file.optional<std::vector<int64_t>>("label_token_ids")) {
    if (ids->size() != decider_label_count) decision_file.reject("label_token_ids", "must list exactly 255 token ids");
    if (std::set<int64_t>(ids->begin(), ids->end()).size() != ids->size()) {
      decision_file.reject("label_token_ids", "must not repeat an id");
    }
    settings.label_token_ids.clear();
    for (const int64_t id : *ids) {
      if (id < 0 || id > INT32_MAX) decision_file.reject("label_token_ids", "must hold token ids");
      settings.label_token_ids.push_back(static_cast<int32_t>(id));
    }
  }
  decision_file.finish();
  return settings;
}

api::Json decider_annotate_long_arrays(const api::Json& value) {
  if (value.is_array()) {
    const bool annotate = static_cast<int64_t>(value.size()) >= annotate_min_length;
    api::Json out = api::Json::array();
    for (std::size_t i = 0; i < value.size(); ++i) {
      api::Json element = decider_annotate_long_arrays(value[i]);
      if (!annotate) {
        out.push_back(std::move(element));
        continue;
      }
      // {"_index": i, **element}: a member "_index" of the element replaces the value but keeps the
      // first position, as a Python dict display does.
      api::Json indexed = api::Json::object();
      indexed["_index"] = i;
      if (element.is_object()) {
        for (auto& [key, member] : element.items()) indexed[key] = std::move(member);
      } else {
        indexed["value"] = std::move(element);
      }
      out.push_back(std::move(indexed));
    }
    return out;
  }
  if (value.is_object()) {
    api::Json out = api::Json::object();
    for (const auto& [key, member] : value.items()) out[key] = decider_annotate_long_arrays(member);
    return out;
  }
  return value;
}

std::string decider_state_text(const api::Json& state) {
  if (state.is_string()) return state.get<std::string>();
  return python_json(decider_annotate_long_arrays(state));
}

std::string decider_strip_level_number(std::string_view level) {
  std::size_t position = 0;
  const auto peek = [&]() -> std::optional<text::DecodedChar> {
    if (position >= level.size()) return std::nullopt;
    return text::decode_utf8(level, position);
  };
  const auto skip_spaces = [&] {
    for (auto c = peek(); c && c->valid && text::unicode::is_python_space(c->code_point); c = peek()) position += c->length;
  };
  skip_spaces();
  if (position < level.size() && level[position] == '-') ++position;
  std::size_t digits = 0;
  for (auto c = peek(); c && c->valid && text::unicode::is_python_decimal(c->code_point); c = peek()) {
    position += c->length;
    ++digits;
  }
  if (digits == 0) return std::string(level);
  skip_spaces();
  if (position >= level.size() || level[position] != ':') return std::string(level);
  ++position;
  skip_spaces();
  return std::string(level.substr(position));
}

api::Result<std::vector<DeciderRow>> decider_rows(const api::Question& question) {
  const bool no_instructions = is_blank(question.instructions);
  std::string text;
  if (question.type == api::QuestionType::noul && no_instructions) {
    if (is_blank(question.noul_true) && is_blank(question.noul_false)) {
      return unsupported("Decider-2B needs instructions, or a true or false description, for a noul question");
    }
    text = std::string(noul_without_instructions);
  } else if (!no_instructions) {
    text = python_text(question.instructions);
  }
  if (text.empty()) {
    return unsupported("Decider-2B needs instructions for " + std::string(api::question_type_name(question.type)) +
                       " questions");
  }
  switch (question.type) {
    case api::QuestionType::choice: {
      if (question.options.size() < decider_min_choice_options) {
        return unsupported("Decider-2B answers choice questions with 2 to 255 options");
      }
      DeciderRow row{std::move(text), {}};
      for (const api::ChoiceOption& option : question.options) {
        row.options.push_back(is_blank(option.description) ? option.name
                                                           : option.name + ": " + python_text(option.description));
      }
      return std::vector<DeciderRow>{std::move(row)};
    }
    case api::QuestionType::noul: {
      const auto line = [](std::string label, const api::Json& description) {
        return is_blank(description) ? label : label + ": " + python_text(description);
      };
      return std::vector<DeciderRow>{{std::move(text), {line("no", question.noul_false), line("yes", question.noul_true)}}};
    }
    case api::QuestionType::score: {
      std::vector<DeciderRow> rows;
      for (const api::Json& level : question.levels) {
        rows.push_back({text + "\nProposed answer: " + decider_strip_level_number(python_text(level)) +
                            "\nDoes the proposed answer fit?",
                        {"no", "yes"}});
      }
      return rows;
    }
  }
  throw std::logic_error("unknown question type");
}

std::vector<int32_t> decider_context_tokens(const text::Tokenizer& tokenizer, const api::Json& state) {
  std::vector<int32_t> context = encode_without_special_tokens(tokenizer, "Context:\n" + decider_state_text(state));
  // The reference keeps the first 32,768 state tokens; the question pieces are never cut.
  if (context.size() > decider_max_state_tokens) context.resize(decider_max_state_tokens);
  return context;
}

std::vector<int32_t> decider_question_tokens(const text::Tokenizer& tokenizer, const DeciderRow& row,
                                             std::span<const int32_t> label_ids) {
  const std::string head = "\n\nQuestion: " + row.question + "\nOptions:";
  constexpr std::string_view tail = "\nAnswer: (";
  if (row.options.size() <= decider_narrow_options) {
    std::string piece = head;
    for (std::size_t i = 0; i < row.options.size(); ++i) piece += "\n(" + letter_label(i) + ") " + row.options[i];
    piece += tail;
    return encode_without_special_tokens(tokenizer, piece);
  }
  // Past ten options the reference splices each label's token id between separately encoded texts.
  std::vector<int32_t> ids = encode_without_special_tokens(tokenizer, head);
  const std::vector<int32_t> open = encode_without_special_tokens(tokenizer, "\n(");
  for (std::size_t i = 0; i < row.options.size(); ++i) {
    ids.insert(ids.end(), open.begin(), open.end());
    ids.push_back(label_ids[i]);
    const std::vector<int32_t> option = encode_without_special_tokens(tokenizer, ") " + row.options[i]);
    ids.insert(ids.end(), option.begin(), option.end());
  }
  const std::vector<int32_t> closing = encode_without_special_tokens(tokenizer, tail);
  ids.insert(ids.end(), closing.begin(), closing.end());
  return ids;
}

int64_t decider_unique_tokens(const std::vector<std::vector<int32_t>>& rows) {
  if (rows.empty()) return 0;
  std::size_t common = rows.front().size();
  for (const auto& row : rows) {
    common = std::min(common, row.size());
    const auto mismatch = std::mismatch(rows.front().begin(), rows.front().begin() + static_cast<ptrdiff_t>(common),
                                        row.begin());
    common = static_cast<std::size_t>(mismatch.first - rows.front().begin());
  }
  int64_t total = static_cast<int64_t>(common);
  for (const auto& row : rows) total += static_cast<int64_t>(row.size() - common);
  return total;
}

api::Result<api::Answer> decider_answer(api::QuestionType type, std::span<const std::vector<double>> row_logits,
                                        const DeciderTemperatures& temperatures, LogitRounding rounding) {
  std::vector<std::vector<double>> rows(row_logits.begin(), row_logits.end());
  for (auto& row : rows) round_logits(row, rounding);
  switch (type) {
    case api::QuestionType::choice:
      return make_answer(type, rows.front(), temperatures.choice, ConfidenceMethod::linear);
    case api::QuestionType::noul: {
      // The row's labels are (no, yes); System One lists noul probabilities true side first.
      const std::array<double, 2> true_first = {rows.front()[1], rows.front()[0]};
      return make_answer(type, true_first, temperatures.noul, ConfidenceMethod::linear);
    }
    case api::QuestionType::score: {
      // Level i fits with P(yes) = σ((yes − no)/T); the level distribution is the fits over their sum,
      // i.e. a softmax of the log-fits, which stays exact where every fit underflows.
      std::vector<double> log_fits;
      for (const auto& row : rows) {
        const double margin = (row[1] - row[0]) / temperatures.score;
        log_fits.push_back(margin >= 0.0 ? -std::log1p(std::exp(-margin)) : margin - std::log1p(std::exp(margin)));
      }
      return make_answer(type, log_fits, 1.0, ConfidenceMethod::linear);
    }
  }
  throw std::logic_error("unknown question type");
}

namespace {

class DeciderPlan : public runtime::Plan {
 public:
  SharedPrefixPrompts prompts;          // one per row
  std::vector<std::size_t> first_row;   // per question, its first row; rows of a question are contiguous
  std::vector<std::size_t> label_counts;  // per row
};

class DeciderEngine : public PrefixReusingEngine {
 public:
  DeciderEngine(const std::filesystem::path& model_dir, DeciderSettings settings)
      : settings_(std::move(settings)),
        tokenizer_(text::Tokenizer::from_file(model_dir / "tokenizer.json")),
        decoder_(model::load_causal_decoder(model_dir, settings_.precision)) {
    const decoder::DecoderInfo& model = decoder_->info();
    row_tokens_ = std::min(decider_max_row_tokens, model.max_positions);
    if (settings_.label_token_ids.size() != decider_label_count) {
      throw checkpoint::LoadError(model_dir.string() + ": the decider-2b contract needs 255 label token ids");
    }
    for (const int32_t id : settings_.label_token_ids) {
      if (static_cast<std::size_t>(id) >= model.vocab_size) {
        throw checkpoint::LoadError(model_dir.string() + ": label token id " + std::to_string(id) +
                                    " is outside the model's vocabulary (a checkpoint with another tokenizer "
                                    "lists its labels in s1serve.json label_token_ids)");
      }
    }
    // Up to ten options the labels are spelled in the text, so the first labels must be the
    // tokenizer's own single-token letters.
    for (std::size_t i = 0; i < 26; ++i) {
      const std::string letter = letter_label(i);
      const std::vector<int32_t> encoded = encode_without_special_tokens(tokenizer_, letter);
      if (encoded.size() != 1 || encoded.front() != settings_.label_token_ids[i]) {
        throw checkpoint::LoadError(model_dir.string() + "/tokenizer.json: the letter '" + letter +
                                    "' does not encode to the single label token " +
                                    std::to_string(settings_.label_token_ids[i]) +
                                    " the decider-2b contract reads");
      }
    }
  }

  runtime::ModelInfo info() const override {
    return served_model_info(settings_.description, decider_label_count, row_tokens_,
                             confidence_method_name(ConfidenceMethod::linear));
  }

  api::Result<std::unique_ptr<runtime::Plan>> prepare(const api::DecisionRequest& request,
                                                      const runtime::PrepareLimits& limits) const override {
    // Contract checks first, over every question in request order (API contract §4.4 step 10).
    std::vector<std::vector<DeciderRow>> question_rows;
    std::size_t row_count = 0;
    for (const api::Question& question : request.questions) {
      auto rows = decider_rows(question);
      if (!rows) return rows.error();
      row_count += rows.value().size();
      question_rows.push_back(std::move(rows.value()));
    }
    if (row_count > decider_max_rows) {
      return api::ApiError::make(api::ErrorCode::max_tokens_exceeded,
                                 "This request needs " + std::to_string(row_count) +
                                     " model rows (a score question takes one per level); Decider-2B runs at most "
                                     "1024");
    }
    const std::vector<int32_t> context = decider_context_tokens(tokenizer_, request.state);

    auto plan = std::make_unique<DeciderPlan>();
    std::vector<std::vector<int32_t>> prompts;
    int64_t processed = 0;
    for (const auto& rows : question_rows) {
      plan->first_row.push_back(prompts.size());
      for (const DeciderRow& row : rows) {
        std::vector<int32_t> prompt = context;
        const std::vector<int32_t> piece = decider_question_tokens(tokenizer_, row, settings_.label_token_ids);
        prompt.insert(prompt.end(), piece.begin(), piece.end());
        if (auto error = check_sequence_fits(static_cast<int64_t>(prompt.size()), static_cast<int64_t>(row_tokens_))) {
          return *error;
        }
        processed += static_cast<int64_t>(prompt.size());
        if (processed > static_cast<int64_t>(decider_max_processed_tokens)) {
          return api::ApiError::make(api::ErrorCode::max_tokens_exceeded,
                                     "This request's rows add up to more than 1,048,576 tokens, the most Decider-2B "
                                     "processes for one request");
        }
        plan->label_counts.push_back(row.options.size());
        prompts.push_back(std::move(prompt));
      }
    }
    plan->input_tokens = decider_unique_tokens(prompts);
    if (auto error = check_request_budget(plan->input_tokens, limits.token_budget)) return *error;
    plan->prompts = split_at_shared_prefix(prompts, decoder_->info().prefix_granularity);
    return std::unique_ptr<runtime::Plan>(std::move(plan));
  }

  api::Result<runtime::RawOutputs> run(runtime::Plan& base_plan) override {
    const auto& plan = static_cast<const DeciderPlan&>(base_plan);
    const auto hidden_rows = last_token_hidden_rows(*decoder_, plan.prompts, prefix_cache(), &base_plan.cached_tokens);
    runtime::RawOutputs raw;  // one entry per row
    for (std::size_t r = 0; r < hidden_rows.size(); ++r) {
      const std::span<const int32_t> labels(settings_.label_token_ids.data(), plan.label_counts[r]);
      raw.label_scores.push_back(decoder_->lm_head().gather_logits(hidden_rows[r], labels));
    }
    return raw;
  }

  api::Result<std::vector<api::Answer>> finish(const api::DecisionRequest& request, const runtime::Plan& base_plan,
                                               runtime::RawOutputs outputs) const override {
    const auto& plan = static_cast<const DeciderPlan&>(base_plan);
    std::vector<api::Answer> answers;
    for (std::size_t q = 0; q < request.questions.size(); ++q) {
      const std::size_t first = plan.first_row[q];
      const std::size_t end = q + 1 < plan.first_row.size() ? plan.first_row[q + 1] : outputs.label_scores.size();
      const std::span<const std::vector<double>> rows(outputs.label_scores.data() + first, end - first);
      auto answer = decider_answer(request.questions[q].type, rows, settings_.temperatures, settings_.logit_rounding);
      if (!answer) return answer.error();
      answers.push_back(std::move(answer.value()));
    }
    return answers;
  }

 private:
  DeciderSettings settings_;
  text::Tokenizer tokenizer_;
  std::unique_ptr<decoder::CausalDecoder> decoder_;
  std::size_t row_tokens_ = 0;
};

}  // namespace

std::unique_ptr<runtime::Engine> make_decider_engine(const std::filesystem::path& model_dir,
                                                     const DeciderSettings& settings) {
  return std::make_unique<DeciderEngine>(model_dir, settings);
}

}  // namespace s1::decide
