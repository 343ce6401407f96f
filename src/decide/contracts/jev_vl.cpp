#include "decide/contracts/jev_vl.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "decide/answer_math.h"
#include "decide/contracts/label_token.h"
#include "decide/prompt.h"
#include "decide/token_budget.h"
#include "model/checkpoint/load_error.h"
#include "model/decoder/causal_decoder.h"
#include "model/families.h"
#include "model/heads/verbalizer_rows.h"
#include "text/tokenizer.h"

namespace s1::decide {
namespace {

constexpr std::string_view protocol = "jev27-bare-v1";
constexpr std::size_t slot_count = 24;
constexpr std::size_t max_labels = 256;
constexpr int64_t max_length_limit = 32768;

double read_temperature(checkpoint::ConfigReader& reader, std::string_view kind) {
  const double value = reader.required<double>(kind);
  if (!std::isfinite(value) || !(value > 0.0)) reader.reject(kind, "must be a finite number above 0");
  return value;
}

void expect_range(checkpoint::ConfigReader& ranges, std::string_view kind, std::vector<int64_t> expected) {
  if (ranges.required<std::vector<int64_t>>(kind) != expected) {
    ranges.reject(kind, "must be [" + std::to_string(expected[0]) + ", " + std::to_string(expected[1]) +
                            "] (the 24-slot head upstream exports)");
  }
}

api::ApiError refusal(const api::Question& question, std::string message) {
  return api::ApiError::validation(
      {api::ValidationIssue{"value_error", {"questions", question.key, "criteria"}, std::move(message)}});
}

// serve_decide.py's _parts over a System One state, text parts only.
api::Result<std::string> state_text(const api::Json& state) {
  if (!state.is_array()) return python_text(state);
  std::string text;
  for (const api::Json& part : state) {
    if (part.is_string()) {
      text += part.get<std::string>();
    } else if (part.is_object() && part.contains("image")) {
      return api::ApiError::make(api::ErrorCode::unsupported_media,
                                 "JEV-27B-VL's image parts are not served yet: s1serve does not run its vision tower");
    } else if (part.is_object() && part.contains("type") && part["type"] == "text") {
      if (part.contains("text") && part["text"].is_string()) text += part["text"].get<std::string>();
    } else {
      text += python_json(part);
    }
  }
  return text;
}

}  // namespace

JevVlExport read_jev_vl_export(const std::filesystem::path& path) {
  checkpoint::ConfigReader reader = checkpoint::ConfigReader::from_file(path);
  JevVlExport file;
  if (reader.required<std::string>("format") != jev_vl_export_format) {
    reader.reject("format", "must be \"" + std::string(jev_vl_export_format) + "\" (a JEV-27B-VL text export)");
  }
  if (reader.required<std::string>("model_id") != jev_vl_model_id) {
    reader.reject("model_id", "must be \"" + std::string(jev_vl_model_id) + "\"");
  }
  if (reader.required<std::string>("protocol") != protocol) {
    reader.reject("protocol", "must be \"" + std::string(protocol) + "\"");
  }
  (void)reader.optional<std::string>("hf_revision");
  checkpoint::ConfigReader pins = reader.required_object("pins");
  for (const char* pin : {"model_index_sha256", "adapter_config_sha256", "adapter_model_sha256", "decision_head_sha256",
                          "calibration_sha256"}) {
    (void)pins.required<std::string>(pin);
  }
  pins.finish();
  checkpoint::ConfigReader merge = reader.required_object("merge");
  (void)merge.required<double>("lora_scale");
  (void)merge.required<std::string>("delta_dtype");
  (void)merge.required<std::string>("backbone_dtype");
  merge.finish();
  checkpoint::ConfigReader temperatures = reader.required_object("temperatures");
  file.temperature_noul = read_temperature(temperatures, "noul");
  file.temperature_score = read_temperature(temperatures, "score");
  file.temperature_choice = read_temperature(temperatures, "choice");
  temperatures.finish();
  file.verbalizer_ids = reader.required<std::vector<int64_t>>("verbalizer_ids");
  if (file.verbalizer_ids.size() != slot_count) reader.reject("verbalizer_ids", "must hold 24 token ids");
  file.verbalizer_bias = reader.required<std::vector<double>>("verbalizer_bias");
  if (file.verbalizer_bias.size() != slot_count ||
      !std::ranges::all_of(file.verbalizer_bias, [](double b) { return std::isfinite(b); })) {
    reader.reject("verbalizer_bias", "must hold 24 finite numbers");
  }
  // Upstream checks only the slot ranges; other members of "slots" (decision_head.json's) are not read.
  checkpoint::ConfigReader slots = reader.required_object("slots");
  checkpoint::ConfigReader ranges = slots.required_object("ranges");
  expect_range(ranges, "noul", {0, 2});
  expect_range(ranges, "score", {2, 8});
  expect_range(ranges, "choice", {8, 24});
  ranges.finish();
  file.labels = reader.required<std::vector<std::string>>("labels");
  file.label_ids = reader.required<std::vector<int64_t>>("label_ids");
  if (file.labels.size() != file.label_ids.size() || file.labels.size() < jev_vl_trained_choice_slots ||
      file.labels.size() > max_labels) {
    reader.reject("label_ids", "must pair one id with each of 16 to 256 labels");
  }
  if (!std::equal(file.label_ids.begin(), file.label_ids.begin() + jev_vl_trained_choice_slots,
                  file.verbalizer_ids.begin() + 8)) {
    reader.reject("label_ids", "the first 16 must be the trained choice slots (verbalizer_ids 8-23)");
  }
  checkpoint::ConfigReader label_head = reader.required_object("label_head");
  file.label_head_file = label_head.required<std::string>("file");
  file.label_head_ids = label_head.required<std::vector<int64_t>>("ids");
  if (label_head.required<std::string>("dtype") != "float32") label_head.reject("dtype", "must be \"float32\"");
  label_head.finish();
  const int64_t max_length = reader.required<int64_t>("max_length");
  if (max_length < 1 || max_length > max_length_limit) reader.reject("max_length", "must be within 1 to 32768");
  file.max_length = static_cast<std::size_t>(max_length);
  reader.finish();
  return file;
}

JevVlSettings read_jev_vl_settings(checkpoint::ConfigReader& decision_file) {
  JevVlSettings settings;
  read_served_model_identity(decision_file, settings);
  settings.precision = read_precision(decision_file, default_linear_precision());
  decision_file.finish();
  return settings;
}

api::Result<std::string> jev_vl_prompt(const api::Json& state, const api::Question& question,
                                       const std::vector<std::string>& labels) {
  std::vector<std::string> lines;
  std::string kind;
  switch (question.type) {
    case api::QuestionType::choice:
      kind = "choice";
      if (question.options.size() < 2) return refusal(question, "JEV-27B-VL needs at least 2 options");
      if (question.options.size() > labels.size()) {
        return api::ApiError::make(api::ErrorCode::too_many_options,
                                   "This model accepts at most " + std::to_string(labels.size()) +
                                       " options per question (its single-token option labels)");
      }
      for (std::size_t i = 0; i < question.options.size(); ++i) {
        const api::ChoiceOption& option = question.options[i];
        lines.push_back(labels[i] + ") " + option.name +
                        (option.description.is_null() ? "" : ": " + python_text(option.description)));
      }
      break;
    case api::QuestionType::noul:
      kind = "noul";
      if (!question.noul_true.is_null() || !question.noul_false.is_null()) {
        return refusal(question,
                       "JEV-27B-VL's noul prompt has no place for criteria texts: put them in the instructions");
      }
      lines = {"false", "true"};
      break;
    case api::QuestionType::score:
      kind = "score";
      if (question.levels.size() != jev_vl_score_levels) {
        return refusal(question, "JEV-27B-VL scores on its fixed 0-5 scale: give exactly 6 levels");
      }
      for (std::size_t i = 0; i < jev_vl_score_levels; ++i) lines.push_back(std::to_string(i));
      break;
  }
  auto state_part = state_text(state);
  if (!state_part) return state_part;
  const std::string instructions = question.instructions.is_null() ? std::string() : python_text(question.instructions);
  std::string prompt =
      "[kind] " + kind + "\n[state] " + state_part.value() + "\n[question] " + instructions + "\n[options]\n";
  for (std::size_t i = 0; i < lines.size(); ++i) prompt += (i == 0 ? "" : "\n") + lines[i];
  return prompt + "\n[decision]:";
}

JevVlReadout jev_vl_readout(const JevVlExport& export_file, api::QuestionType type, std::size_t count) {
  const auto slots = [&](std::size_t begin, std::size_t end, double temperature) {
    return JevVlReadout{{export_file.verbalizer_ids.begin() + static_cast<std::ptrdiff_t>(begin),
                         export_file.verbalizer_ids.begin() + static_cast<std::ptrdiff_t>(end)},
                        {export_file.verbalizer_bias.begin() + static_cast<std::ptrdiff_t>(begin),
                         export_file.verbalizer_bias.begin() + static_cast<std::ptrdiff_t>(end)},
                        temperature};
  };
  switch (type) {
    case api::QuestionType::noul:
      return slots(0, 2, export_file.temperature_noul);
    case api::QuestionType::score:
      return slots(2, 8, export_file.temperature_score);
    case api::QuestionType::choice:
      break;
  }
  JevVlReadout readout{
      {export_file.label_ids.begin(), export_file.label_ids.begin() + static_cast<std::ptrdiff_t>(count)},
      {},
      export_file.temperature_choice};
  for (std::size_t i = 0; i < count; ++i) {
    readout.bias.push_back(i < jev_vl_trained_choice_slots ? export_file.verbalizer_bias[8 + i] : 0.0);
  }
  return readout;
}

std::vector<double> jev_vl_label_scores(const JevVlReadout& readout, api::QuestionType type,
                                        const std::vector<double>& logits) {
  std::vector<double> scores;
  for (std::size_t i = 0; i < logits.size(); ++i) scores.push_back((logits[i] + readout.bias[i]) / readout.temperature);
  if (type == api::QuestionType::noul) std::ranges::reverse(scores);  // upstream (false, true), the API (true, false)
  return scores;
}

namespace {

class JevVlPlan : public runtime::Plan {
 public:
  SharedPrefixPrompts prompts;  // one per question
  std::vector<JevVlReadout> readouts;
};

class JevVlEngine : public PrefixReusingEngine {
 public:
  JevVlEngine(const std::filesystem::path& model_dir, JevVlExport export_file, JevVlSettings settings)
      : export_(std::move(export_file)),
        settings_(std::move(settings)),
        tokenizer_(text::Tokenizer::from_file(model_dir / "tokenizer.json")),
        decoder_(model::load_causal_decoder(model_dir, settings_.precision)),
        rows_(heads::VerbalizerRows::from_file(model_dir / export_.label_head_file, decoder_->info().hidden_size)) {
    const std::filesystem::path head = model_dir / export_.label_head_file;
    if (rows_.ids() != export_.label_head_ids) {
      throw checkpoint::LoadError(head.string() + ": its ids are not the label_head ids of " +
                                  std::string(jev_vl_export_file));
    }
    for (const std::vector<int64_t>* ids : {&export_.verbalizer_ids, &export_.label_ids}) {
      for (const int64_t id : *ids) {
        if (!rows_.contains(id)) {
          throw checkpoint::LoadError(head.string() + ": no row for token " + std::to_string(id) + " that " +
                                      std::string(jev_vl_export_file) + " reads");
        }
      }
    }
    context_tokens_ = std::min(export_.max_length, decoder_->info().max_positions);
    max_options_ = std::min(export_.labels.size(), api::max_choice_options);
  }

  runtime::ModelInfo info() const override {
    return served_model_info(settings_.description, max_options_, context_tokens_,
                             confidence_method_name(ConfidenceMethod::linear));
  }

  // The server's warm-up request with the six score levels JEV's fixed 0-5 scale needs.
  api::DecisionRequest warm_up_request() const override {
    api::DecisionRequest request = Engine::warm_up_request();
    for (api::Question& question : request.questions) {
      if (question.type == api::QuestionType::score) {
        question.levels = {"calm", "mild", "annoyed", "upset", "angry", "furious"};
      }
    }
    return request;
  }

  api::Result<std::unique_ptr<runtime::Plan>> prepare(const api::DecisionRequest& request,
                                                      const runtime::PrepareLimits& limits) const override {
    auto plan = std::make_unique<JevVlPlan>();
    std::vector<std::vector<int32_t>> prompts;
    const std::vector<std::string> labels(export_.labels.begin(),
                                          export_.labels.begin() + static_cast<std::ptrdiff_t>(max_options_));
    for (const api::Question& question : request.questions) {
      auto prompt = jev_vl_prompt(request.state, question, labels);
      if (!prompt) return prompt.error();
      auto encoded = encode_prompt_within(tokenizer_, prompt.value(), context_tokens_);
      if (!encoded) return encoded.error();
      prompts.push_back(std::move(encoded.value()));
      plan->readouts.push_back(jev_vl_readout(export_, question.type, question.label_count()));
    }
    plan->prompts = split_at_shared_prefix(prompts, decoder_->info().prefix_granularity);
    plan->input_tokens = plan->prompts.input_tokens;
    if (auto error = check_request_budget(plan->input_tokens, limits.token_budget)) return *error;
    return std::unique_ptr<runtime::Plan>(std::move(plan));
  }

  api::Result<runtime::RawOutputs> run(runtime::Plan& base_plan) override {
    const auto& plan = static_cast<const JevVlPlan&>(base_plan);
    const std::vector<std::vector<float>> rows =
        last_token_hidden_rows(*decoder_, plan.prompts, prefix_cache(), &base_plan.cached_tokens);
    runtime::RawOutputs raw;
    for (std::size_t q = 0; q < rows.size(); ++q)
      raw.label_scores.push_back(rows_.logits(rows[q], plan.readouts[q].token_ids));
    return raw;
  }

  api::Result<std::vector<api::Answer>> finish(const api::DecisionRequest& request, const runtime::Plan& base_plan,
                                               runtime::RawOutputs outputs) const override {
    const auto& plan = static_cast<const JevVlPlan&>(base_plan);
    std::vector<api::Answer> answers;
    for (std::size_t q = 0; q < request.questions.size(); ++q) {
      const api::QuestionType type = request.questions[q].type;
      // The slot bias and the kind's temperature are applied here, so the softmax runs at T = 1. A score
      // is Σ i·pᵢ as the API defines it; upstream's own answer, the most probable category, is the
      // mode of the same probabilities.
      auto answer = make_answer(type, jev_vl_label_scores(plan.readouts[q], type, outputs.label_scores[q]), 1.0,
                                ConfidenceMethod::linear);
      if (!answer) return answer.error();
      answers.push_back(std::move(answer.value()));
    }
    return answers;
  }

 private:
  JevVlExport export_;
  JevVlSettings settings_;
  text::Tokenizer tokenizer_;
  std::unique_ptr<decoder::CausalDecoder> decoder_;
  heads::VerbalizerRows rows_;
  std::size_t context_tokens_ = 0;
  std::size_t max_options_ = 0;
};

}  // namespace

std::unique_ptr<runtime::Engine> make_jev_vl_engine(const std::filesystem::path& model_dir,
                                                    const JevVlExport& export_file, const JevVlSettings& settings) {
  return std::make_unique<JevVlEngine>(model_dir, export_file, settings);
}

}  // namespace s1::decide
