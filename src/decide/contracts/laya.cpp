#include "decide/contracts/laya.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <utility>

#include "decide/answer_math.h"
#include "decide/contract_common.h"
#include "decide/prompt.h"
#include "decide/token_budget.h"
#include "model/checkpoint/load_error.h"
#include "model/families.h"

namespace s1::decide {
namespace {

constexpr std::string_view mask_token = "[MASK]";
constexpr std::size_t option_token_limit = 48;
// When the options leave the header fewer than this many tokens, they shrink (laya's build_sequence).
constexpr std::size_t header_floor = 16;
constexpr std::size_t header_minimum = 8;
constexpr std::size_t option_minimum = 4;
constexpr double temperature_min = 0.5;
constexpr double temperature_max = 5.0;

std::string without_mask(std::string text) {
  for (std::size_t at = text.find(mask_token); at != std::string::npos; at = text.find(mask_token, at + 1)) {
    text.replace(at, mask_token.size(), " ");
  }
  return text;
}

std::vector<int32_t> encode(const text::Tokenizer& tokenizer, const std::string& text) {
  return encode_without_special_tokens(tokenizer, without_mask(text));
}

bool no_description(const api::Json& value) {
  return value.is_null() || (value.is_string() && value.get<std::string>().empty());
}

std::string_view kind_name(laya::QuestionKind kind) {
  switch (kind) {
    case laya::QuestionKind::choice:
      return "choice";
    case laya::QuestionKind::score:
      return "score";
    case laya::QuestionKind::noul:
      return "noul";
  }
  return "choice";
}

laya::QuestionKind kind_of(api::QuestionType type) {
  switch (type) {
    case api::QuestionType::choice:
      return laya::QuestionKind::choice;
    case api::QuestionType::score:
      return laya::QuestionKind::score;
    case api::QuestionType::noul:
      return laya::QuestionKind::noul;
  }
  return laya::QuestionKind::choice;
}

}  // namespace

LayaSettings read_laya_settings(checkpoint::ConfigReader& decision_file) {
  LayaSettings settings;
  read_served_model_identity(decision_file, settings);
  settings.precision = read_precision(decision_file, settings.precision);
  const int64_t questions = decision_file.optional<int64_t>("max_questions", 16);
  if (questions < 1) decision_file.reject("max_questions", "must be at least 1");
  settings.max_questions = static_cast<std::size_t>(questions);
  const int64_t markers = decision_file.optional<int64_t>("max_markers", 2048);
  if (markers < 1) decision_file.reject("max_markers", "must be at least 1");
  settings.max_markers = static_cast<std::size_t>(markers);
  decision_file.finish();
  return settings;
}

std::vector<std::string> laya_option_texts(const api::Question& question) {
  std::vector<std::string> texts;
  switch (question.type) {
    case api::QuestionType::choice:
      for (const api::ChoiceOption& option : question.options) {
        texts.push_back(no_description(option.description) ? option.name
                                                           : option.name + ": " + python_text(option.description));
      }
      break;
    case api::QuestionType::score:
      for (std::size_t i = 0; i < question.levels.size(); ++i) {
        texts.push_back("level " + std::to_string(i) + ": " + python_text(question.levels[i]));
      }
      break;
    case api::QuestionType::noul:
      texts.push_back("false: " + (no_description(question.noul_false) ? std::string("no, the statement does not hold")
                                                                       : python_text(question.noul_false)));
      texts.push_back("true: " + (no_description(question.noul_true) ? std::string("yes, the statement holds")
                                                                     : python_text(question.noul_true)));
      break;
  }
  return texts;
}

std::vector<int32_t> laya_state_ids(const text::Tokenizer& tokenizer, const api::Json& state) {
  return encode(tokenizer, python_text(state));
}

api::Result<LayaRow> laya_pack_question(const text::Tokenizer& tokenizer, const LayaPacking& packing,
                                        std::span<const int32_t> state_ids, bool state_is_array,
                                        const api::Question& question) {
  LayaRow row;
  row.kind = kind_of(question.type);
  std::vector<std::vector<int32_t>> options;
  std::size_t option_tokens = 0;
  for (const std::string& text : laya_option_texts(question)) {
    std::vector<int32_t> ids{packing.mask};
    const std::vector<int32_t> encoded = encode(tokenizer, " " + text);
    ids.insert(ids.end(), encoded.begin(), encoded.begin() + static_cast<std::ptrdiff_t>(
                                                                 std::min(encoded.size(), option_token_limit)));
    option_tokens += ids.size();
    options.push_back(std::move(ids));
  }
  const auto head_max = static_cast<std::ptrdiff_t>(packing.head_max_len);
  std::ptrdiff_t header_budget = head_max - static_cast<std::ptrdiff_t>(option_tokens);
  if (header_budget < static_cast<std::ptrdiff_t>(header_floor)) {
    const std::size_t per_option =
        std::max(option_minimum, (packing.head_max_len - header_floor) / std::max<std::size_t>(1, options.size()));
    option_tokens = 0;
    for (std::vector<int32_t>& ids : options) {
      ids.resize(std::min(ids.size(), per_option));
      option_tokens += ids.size();
    }
    header_budget = head_max - static_cast<std::ptrdiff_t>(option_tokens);
  }
  const std::string instructions = python_text(question.instructions);
  std::vector<int32_t> header = encode(tokenizer, std::string(kind_name(row.kind)) + " question: " + instructions);
  header.resize(std::min(header.size(),
                         static_cast<std::size_t>(std::max<std::ptrdiff_t>(header_minimum, header_budget))));

  row.ids.push_back(packing.cls);
  row.ids.insert(row.ids.end(), header.begin(), header.end());
  row.ids.push_back(packing.sep);
  for (const std::vector<int32_t>& ids : options) {
    row.markers.push_back(row.ids.size());
    row.ids.insert(row.ids.end(), ids.begin(), ids.end());
  }
  row.ids.push_back(packing.sep);
  const std::size_t room = packing.max_len > row.ids.size() + 1 ? packing.max_len - row.ids.size() - 1 : 0;
  const std::size_t kept = std::min(room, state_ids.size());
  const auto first = state_is_array ? state_ids.end() - static_cast<std::ptrdiff_t>(kept) : state_ids.begin();
  row.ids.insert(row.ids.end(), first, first + static_cast<std::ptrdiff_t>(kept));
  row.ids.push_back(packing.sep);
  if (row.ids.size() > packing.max_len) row.ids.resize(packing.max_len);
  if (!row.markers.empty() && row.markers.back() >= packing.max_len) {
    return api::ApiError::make(api::ErrorCode::too_many_options,
                               "Question '" + question.key + "' has more options than fit this model's " +
                                   std::to_string(packing.max_len) + "-token row (each option keeps at least " +
                                   std::to_string(option_minimum) + " tokens)");
  }
  return row;
}

double round_to_4_decimals(double value) {
  // printf's %.4f rounds the exact binary value, halves to even, as Python's round(x, 4) does.
  char text[64];
  std::snprintf(text, sizeof text, "%.4f", value);
  const double rounded = std::strtod(text, nullptr);
  return rounded == 0.0 ? 0.0 : rounded;  // no -0.0 on the wire
}

double laya_temperature(const laya::AgentConfig& config, laya::QuestionKind kind, std::size_t options) {
  const char* bucket = options <= 2 ? "2" : options <= 5 ? "3-5" : options <= 10 ? "6-10" : "11+";
  const std::string key = std::string(kind_name(kind)) + ":" + bucket;
  const auto found = config.temperature_by_options.find(key);
  const double raw = found != config.temperature_by_options.end()
                         ? found->second
                         : config.temperature[static_cast<std::size_t>(kind)];
  // laya clamps every shipped temperature (e.g. choice:11+ = 0.1006 would sharpen ~10×).
  return std::isfinite(raw) ? std::clamp(raw, temperature_min, temperature_max) : 1.0;
}

api::Result<api::Answer> laya_answer(laya::QuestionKind kind, std::span<const float> marker_logits,
                                     double temperature) {
  const std::size_t k = marker_logits.size();
  if (k == 0 || !std::all_of(marker_logits.begin(), marker_logits.end(), [](float x) { return std::isfinite(x); })) {
    return api::ApiError::make(api::ErrorCode::internal_error, "the model produced no finite option logits");
  }
  // NumPy float32 throughout, as laya's _decode_answers: the temperature is cast to float32 first.
  const auto t = static_cast<float>(temperature);
  std::vector<float> p(k);
  for (std::size_t i = 0; i < k; ++i) p[i] = marker_logits[i] / t;
  const float largest = *std::max_element(p.begin(), p.end());
  float sum = 0.0F;
  for (float& value : p) sum += (value = std::exp(value - largest));
  for (float& value : p) value /= sum;
  std::size_t winner = 0;
  for (std::size_t i = 1; i < k; ++i) {
    if (p[i] > p[winner]) winner = i;
  }
  api::Answer answer;
  answer.type = kind == laya::QuestionKind::noul ? api::QuestionType::noul
                : kind == laya::QuestionKind::score ? api::QuestionType::score
                                                    : api::QuestionType::choice;
  if (kind == laya::QuestionKind::noul) {
    const double p_true = static_cast<double>(p[1]);
    answer.probabilities = {round_to_4_decimals(p_true), round_to_4_decimals(static_cast<double>(p[0]))};
    answer.confidence = round_to_4_decimals(std::max(p_true, 1.0 - p_true));
    return answer;
  }
  for (const float value : p) answer.probabilities.push_back(round_to_4_decimals(static_cast<double>(value)));
  answer.choice_index = winner;
  float confidence = 1.0F;
  if (k >= 2) {
    float entropy = 0.0F;
    for (const float value : p) entropy += -value * std::log(std::clamp(value, 1e-12F, 1.0F));
    confidence = std::clamp(1.0F - entropy / static_cast<float>(std::log(static_cast<double>(k))), 0.0F, 1.0F);
  }
  answer.confidence = round_to_4_decimals(static_cast<double>(confidence));
  if (kind == laya::QuestionKind::score) {
    double score = 0.0;  // NumPy promotes arange(k) · p to float64
    for (std::size_t i = 0; i < k; ++i) score += static_cast<double>(i) * static_cast<double>(p[i]);
    answer.score = round_to_4_decimals(score);
  }
  return answer;
}

namespace {

class LayaPlan : public runtime::Plan {
 public:
  std::vector<LayaRow> rows;  // request order
};

class LayaEngine : public runtime::Engine {
 public:
  LayaEngine(const std::filesystem::path& model_dir, LayaSettings settings)
      : settings_(std::move(settings)),
        tokenizer_(text::Tokenizer::from_file(model_dir / "tokenizer" / "tokenizer.json")),
        model_(model_dir, model::arithmetic_of(settings_.precision)) {
    const std::filesystem::path tokenizer_file = model_dir / "tokenizer" / "tokenizer.json";
    const auto special = [&](std::string_view token) {
      const std::optional<int32_t> id = tokenizer_.token_to_id(token);
      if (!id || *id < 0 || std::cmp_greater_equal(*id, model_.encoder_info().vocab_size)) {
        throw checkpoint::LoadError(tokenizer_file.string() + ": has no token '" + std::string(token) +
                                    "' within the encoder's vocabulary (LAYA rows need [CLS], [SEP] and [MASK])");
      }
      return *id;
    };
    packing_.cls = special("[CLS]");
    packing_.sep = special("[SEP]");
    packing_.mask = special(mask_token);
    packing_.max_len = static_cast<std::size_t>(model_.agent_config().max_len);
    packing_.head_max_len = static_cast<std::size_t>(model_.agent_config().head_max_len);
  }

  runtime::ModelInfo info() const override {
    return served_model_info(settings_.description, api::max_choice_options, packing_.max_len,
                             confidence_method_name(ConfidenceMethod::entropy));
  }

  api::Result<std::unique_ptr<runtime::Plan>> prepare(const api::DecisionRequest& request,
                                                      const runtime::PrepareLimits& limits) const override {
    if (request.questions.size() > settings_.max_questions) {
      return api::ApiError::make(api::ErrorCode::payload_too_large,
                                 "This model answers at most " + std::to_string(settings_.max_questions) +
                                     " questions per request");
    }
    std::size_t markers = 0;
    for (const api::Question& question : request.questions) markers += question.label_count();
    if (markers > settings_.max_markers) {
      return api::ApiError::make(api::ErrorCode::payload_too_large,
                                 "This model reads at most " + std::to_string(settings_.max_markers) +
                                     " options per request, over all questions");
    }
    auto plan = std::make_unique<LayaPlan>();
    const std::vector<int32_t> state_ids = laya_state_ids(tokenizer_, request.state);
    for (const api::Question& question : request.questions) {
      auto row = laya_pack_question(tokenizer_, packing_, state_ids, request.state.is_array(), question);
      if (!row) return row.error();
      plan->input_tokens += static_cast<int64_t>(row.value().ids.size());
      plan->rows.push_back(std::move(row.value()));
    }
    if (auto error = check_request_budget(plan->input_tokens, limits.token_budget)) return *error;
    return std::unique_ptr<runtime::Plan>(std::move(plan));
  }

  api::Result<runtime::RawOutputs> run(runtime::Plan& base_plan) override {
    const auto& plan = static_cast<const LayaPlan&>(base_plan);
    std::vector<laya::Row> rows;
    for (const LayaRow& row : plan.rows) rows.push_back(laya::Row{row.ids, row.markers, row.kind});
    runtime::RawOutputs raw;
    for (std::size_t q = 0; const std::vector<float>& logits : model_.marker_logits(rows)) {
      std::vector<double> scores(logits.begin(), logits.end());
      // The runtime's label order for noul is (true, false); laya's markers are (false, true).
      if (plan.rows[q].kind == laya::QuestionKind::noul) std::reverse(scores.begin(), scores.end());
      raw.label_scores.push_back(std::move(scores));
      ++q;
    }
    return raw;
  }

  api::Result<std::vector<api::Answer>> finish(const api::DecisionRequest& request, const runtime::Plan& base_plan,
                                               runtime::RawOutputs outputs) const override {
    const auto& plan = static_cast<const LayaPlan&>(base_plan);
    std::vector<api::Answer> answers;
    for (std::size_t q = 0; q < request.questions.size(); ++q) {
      const laya::QuestionKind kind = plan.rows[q].kind;
      std::vector<double>& scores = outputs.label_scores[q];
      if (kind == laya::QuestionKind::noul) std::reverse(scores.begin(), scores.end());
      // The logits were float32 from the head; the round trip through double is exact.
      const std::vector<float> logits(scores.begin(), scores.end());
      auto answer = laya_answer(kind, logits, laya_temperature(model_.agent_config(), kind, logits.size()));
      if (!answer) return answer.error();
      answers.push_back(std::move(answer.value()));
    }
    return answers;
  }

 private:
  LayaSettings settings_;
  text::Tokenizer tokenizer_;
  laya::LayaModel model_;
  LayaPacking packing_;
};

}  // namespace

std::unique_ptr<runtime::Engine> make_laya_engine(const std::filesystem::path& model_dir, const LayaSettings& settings) {
  return std::make_unique<LayaEngine>(model_dir, settings);
}

}  // namespace s1::decide
