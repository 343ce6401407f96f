#include "decide/contracts/jemm.h"

#include <algorithm>
#include <fstream>
#include <optional>
#include <stdexcept>

#include "decide/answer_math.h"
#include "decide/contract_common.h"
#include "decide/contracts/label_token.h"
#include "decide/prompt.h"
#include "decide/python_text.h"
#include "model/checkpoint/load_error.h"
#include "model/families.h"
#include "model/decoder/lora_adapter.h"
#include "model/decoder/output_matrix.h"
#include "text/tokenizer.h"

namespace s1::decide {
namespace {

// ypcypc/JEMM 6822fe0f jemm/contract.py SYSTEM.
constexpr std::string_view system_message =
    "Choose the best available candidate for the question using only the supplied state. "
    "Return exactly one candidate label.";

// systemone.py _description: an object's "description" member (absent: empty), nothing for null,
// str() of anything else.
std::string description_of(const api::Json& spec) {
  if (spec.is_object()) {
    const auto member = spec.find("description");
    return member == spec.end() ? std::string() : python_str(*member);
  }
  if (spec.is_null()) return {};
  return python_str(spec);
}

// systemone.py _action + contract.py render_candidate: a candidate is a tool spec when its value's
// "action" is an object with a "tool_name" member.
bool is_tool_candidate(const api::Json& spec) {
  if (!spec.is_object()) return false;
  const auto action = spec.find("action");
  return action != spec.end() && action->is_object() && action->contains("tool_name");
}

// contract.py _param_names.
std::vector<std::string> parameter_names(const api::Json& parameters) {
  if (!parameters.is_object()) return {};
  const auto properties_member = parameters.find("properties");
  const api::Json& properties =
      properties_member != parameters.end() && properties_member->is_object() ? *properties_member : parameters;
  const auto required_member = parameters.find("required");
  const bool has_required = required_member != parameters.end() && required_member->is_array();
  const auto is_required = [&](const std::string& key) {
    return has_required && std::any_of(required_member->begin(), required_member->end(), [&](const api::Json& entry) {
             return entry.is_string() && entry.get_ref<const std::string&>() == key;
           });
  };
  std::vector<std::string> names;
  for (const auto& [key, spec] : properties.items()) {
    if ((key == "properties" || key == "required" || key == "type") && !spec.is_object()) continue;
    std::string piece = key;
    if (spec.is_object()) {
      if (is_required(key)) piece += '*';
      const auto default_value = spec.find("default");
      if (default_value != spec.end() && !default_value->is_null() &&
          !(default_value->is_string() && default_value->get_ref<const std::string&>().empty())) {
        piece += '=';
        piece += python_prefix(python_flatten_whitespace(python_str(*default_value)), 24);
      }
    }
    names.push_back(std::move(piece));
  }
  return names;
}

// The reference export's manifest records what its tokenizer and chat template produced
// (recipe/jemm/export.py: the template rendered around a marker user turn, the label ids, the
// calibration). When the directory has one, s1serve's own rendering must agree with it, so a template
// this port renders differently fails the load instead of shifting every prompt.
void check_export_manifest(const std::filesystem::path& model_dir, const text::ChatTemplate& chat_template,
                           const std::vector<int32_t>& label_ids) {
  const std::filesystem::path file = model_dir / "jemm_export.json";
  if (!std::filesystem::exists(file)) return;
  std::ifstream in(file, std::ios::binary);
  const api::Json manifest = api::Json::parse(in, nullptr, false);
  if (manifest.is_discarded() || !manifest.is_object()) {
    throw checkpoint::LoadError(file.string() + ": not a JSON object");
  }
  const auto fail = [&](const std::string& key, const std::string& why) {
    throw checkpoint::LoadError(file.string() + ": key '" + key + "': " + why);
  };
  // Letters only: the Qwen3.5 template strips whitespace (U+001C–001F included) around user text.
  constexpr std::string_view marker = "JEMMUSERTEXTMARKER";
  const std::vector<text::ChatMessage> messages{{"system", std::string(system_message)}, {"user", std::string(marker)}};
  const std::string rendered = chat_template.render(messages, true, text::Thinking::disabled);
  const std::size_t at = rendered.find(marker);
  const auto check_text = [&](const char* key, const std::string& expected) {
    const auto member = manifest.find(key);
    if (member != manifest.end() && (!member->is_string() || member->get_ref<const std::string&>() != expected)) {
      fail(key, "differs from s1serve's rendering of the model's chat template (" + api::Json(expected).dump() + ")");
    }
  };
  check_text("chat_prefix", rendered.substr(0, at));
  check_text("chat_suffix", rendered.substr(at + marker.size()));
  if (const auto ids = manifest.find("label_token_ids"); ids != manifest.end()) {
    if (!ids->is_array() || *ids != api::Json(label_ids)) {
      fail("label_token_ids", "differs from the ids tokenizer.json gives the labels A–Z, 0–5 (" +
                                  api::Json(label_ids).dump() + ")");
    }
  }
  if (const auto temperature = manifest.find("temperature"); temperature != manifest.end()) {
    if (!temperature->is_number() || temperature->get<double>() != jemm_text_temperature) {
      fail("temperature", "differs from the pinned text calibration 1.3480874159655591");
    }
  }
  const auto lora_mode = manifest.find("lora_mode");
  if (lora_mode != manifest.end() && *lora_mode == "unmerged_fp32" &&
      !std::filesystem::exists(model_dir / "adapter_model.safetensors")) {
    fail("lora_mode", "the export keeps the adapter unmerged but adapter_model.safetensors is missing");
  }
}

std::string member_text(const api::Json& object, const char* name) {
  const auto member = object.find(name);
  return member == object.end() ? std::string() : python_str(*member);
}

}  // namespace

JemmSettings read_jemm_settings(checkpoint::ConfigReader& decision_file) {
  return read_identity_precision_and_rounding<JemmSettings>(decision_file);
}

std::string_view jemm_system_message() { return system_message; }

std::string jemm_tool_text(std::string_view description) {
  // Python's json.loads keeps the last of duplicate members at the first one's place, as ordered_json
  // does. (It would also accept NaN/Infinity, which fall back to the flattened text here.)
  const api::Json tool = api::Json::parse(description, nullptr, false);
  if (tool.is_discarded() || !tool.is_object() || !tool.contains("name")) return python_flatten_whitespace(description);
  std::string text = python_flatten_whitespace(member_text(tool, "name"));
  const std::string summary = python_flatten_whitespace(member_text(tool, "description"));
  if (!summary.empty()) text += " \u2014 " + summary;
  const auto parameters = tool.find("parameters");
  const std::vector<std::string> names =
      parameters == tool.end() ? std::vector<std::string>() : parameter_names(*parameters);
  if (!names.empty()) {
    text += " | params: ";
    for (std::size_t i = 0; i < names.size(); ++i) text += (i > 0 ? ", " : "") + names[i];
  }
  return text;
}

std::vector<std::string> jemm_candidate_texts(const api::Question& question) {
  std::vector<std::string> texts;
  switch (question.type) {
    case api::QuestionType::choice:
      for (const api::ChoiceOption& option : question.options) {
        const std::string description = description_of(option.description);
        texts.push_back(is_tool_candidate(option.description) ? jemm_tool_text(description)
                                                              : python_flatten_whitespace(description));
      }
      break;
    case api::QuestionType::score:
      for (std::size_t i = 0; i < question.levels.size(); ++i) {
        const std::string description = description_of(question.levels[i]);
        texts.push_back(python_flatten_whitespace(description.empty() ? "level " + std::to_string(i) : description));
      }
      break;
    case api::QuestionType::noul: {
      const std::string yes = description_of(question.noul_true);
      const std::string no = description_of(question.noul_false);
      texts.push_back(python_flatten_whitespace(yes.empty() ? "yes" : yes));
      texts.push_back(python_flatten_whitespace(no.empty() ? "no" : no));
      break;
    }
  }
  return texts;
}

std::vector<text::ChatMessage> jemm_messages(const api::Json& state, const api::Question& question) {
  const std::vector<std::string> candidates = jemm_candidate_texts(question);
  if (candidates.size() > jemm_max_candidates) {
    throw std::invalid_argument("JEMM renders at most 32 candidates per question");
  }
  const std::string state_text = state.is_string() ? state.get<std::string>() : python_compact_json(state);
  // The reference reads str(question.get("instructions", "")); the API does not tell an explicit
  // null from an absent member, so both render empty.
  const std::string instructions = question.instructions.is_null() ? std::string() : python_str(question.instructions);
  std::string user = "State:\n";
  user += python_strip(state_text);
  user += "\n\nQuestion: " + python_flatten_whitespace(instructions) + "\n\nCandidates:\n";
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (i > 0) user += '\n';
    user += jemm_labels[i];
    user += ") " + candidates[i];
  }
  user += "\n\nAnswer with exactly one candidate label.";
  return {{"system", std::string(system_message)}, {"user", std::move(user)}};
}

api::Result<api::Answer> jemm_answer(api::QuestionType type, std::span<const double> label_logits,
                                     LogitRounding rounding) {
  std::vector<double> scores(label_logits.begin(), label_logits.end());
  round_logits(scores, rounding);
  // Noul labels are yes (A) then no (B): the answer's p(true) is the first probability.
  return make_answer(type, scores, jemm_text_temperature, ConfidenceMethod::max_probability);
}

namespace {

class JemmPlan : public runtime::Plan {
 public:
  SharedPrefixPrompts prompts;  // one per question
};

class JemmEngine : public PrefixReusingEngine {
 public:
  JemmEngine(const std::filesystem::path& model_dir, JemmSettings settings)
      : settings_(std::move(settings)),
        tokenizer_(text::Tokenizer::from_file(model_dir / "tokenizer.json")),
        chat_template_(text::ChatTemplate::from_model_dir(model_dir)),
        decoder_(load_decoder(model_dir, settings_.precision)) {
    const decoder::DecoderInfo& model = decoder_->info();
    context_tokens_ = std::min(jemm_max_prompt_tokens, model.max_positions);
    std::vector<int32_t> label_ids;
    for (const char label : jemm_labels) {
      label_ids.push_back(
          require_label_token(tokenizer_, std::string(1, label), model.vocab_size, model_dir, jemm_contract));
    }
    check_export_manifest(model_dir, chat_template_, label_ids);
    const std::filesystem::path side_file = model_dir / jemm_label_head_file;
    if (std::filesystem::exists(side_file)) {
      label_head_.emplace(decoder::OutputMatrix::from_side_file(side_file, jemm_label_head_tensor, model.hidden_size,
                                                                settings_.precision));
      if (label_head_->rows() != jemm_labels.size()) {
        throw checkpoint::LoadError(side_file.string() + ": tensor '" + std::string(jemm_label_head_tensor) + "' has " +
                                    std::to_string(label_head_->rows()) + " rows, expected 32 (labels A–Z, 0–5)");
      }
      for (std::size_t i = 0; i < jemm_labels.size(); ++i) head_rows_.push_back(static_cast<int32_t>(i));
    } else {
      head_rows_ = std::move(label_ids);
    }
  }

  runtime::ModelInfo info() const override {
    return served_model_info(settings_.description, jemm_max_candidates, context_tokens_,
                             confidence_method_name(ConfidenceMethod::max_probability));
  }

  api::Result<std::unique_ptr<runtime::Plan>> prepare(const api::DecisionRequest& request,
                                                      const runtime::PrepareLimits& limits) const override {
    // Contract checks first, over every question in request order (API contract §4.4 step 10).
    for (const api::Question& question : request.questions) {
      if (question.label_count() > jemm_max_candidates) {
        return api::ApiError::make(api::ErrorCode::too_many_options,
                                   "This model accepts at most 32 candidates per question (labels A to Z, 0 to 5)");
      }
    }
    auto prompts = encode_question_prompts(
        request, chat_template_, tokenizer_, text::Thinking::disabled,
        [&](const api::Question& question) { return jemm_messages(request.state, question); }, context_tokens_,
        decoder_->info().prefix_granularity, limits.token_budget);
    if (!prompts) return prompts.error();
    auto plan = std::make_unique<JemmPlan>();
    plan->prompts = std::move(prompts.value());
    plan->input_tokens = plan->prompts.input_tokens;
    return std::unique_ptr<runtime::Plan>(std::move(plan));
  }

  api::Result<runtime::RawOutputs> run(runtime::Plan& base_plan) override {
    const auto& plan = static_cast<const JemmPlan&>(base_plan);
    const decoder::OutputMatrix& head = label_head_ ? *label_head_ : decoder_->lm_head();
    runtime::RawOutputs raw;
    for (const auto& row : last_token_hidden_rows(*decoder_, plan.prompts, prefix_cache(), &base_plan.cached_tokens)) {
      raw.label_scores.push_back(head.gather_logits(row, head_rows_));
    }
    return raw;
  }

  api::Result<std::vector<api::Answer>> finish(const api::DecisionRequest& request, const runtime::Plan& /*plan*/,
                                               runtime::RawOutputs outputs) const override {
    std::vector<api::Answer> answers;
    for (std::size_t q = 0; q < request.questions.size(); ++q) {
      const api::Question& question = request.questions[q];
      const std::span<const double> logits(outputs.label_scores[q].data(), question.label_count());
      auto answer = jemm_answer(question.type, logits, settings_.logit_rounding);
      if (!answer) return answer.error();
      answers.push_back(std::move(answer.value()));
    }
    return answers;
  }

 private:
  // The reference keeps JEMM's FP32 LoRA unmerged (a pre-merged BF16 build failed its gate); a
  // directory holding the adapter gets it applied the same way, never merged and never dropped.
  static std::unique_ptr<decoder::CausalDecoder> load_decoder(const std::filesystem::path& model_dir,
                                                              backend::cpu::Precision precision) {
    if (std::filesystem::exists(model_dir / "adapter_model.safetensors") ||
        std::filesystem::exists(model_dir / "adapter_config.json")) {
      const decoder::LoraAdapter adapter = decoder::LoraAdapter::from_directory(model_dir);
      return model::load_causal_decoder(model_dir, precision, {.adapter = &adapter});
    }
    return model::load_causal_decoder(model_dir, precision);
  }

  JemmSettings settings_;
  text::Tokenizer tokenizer_;
  text::ChatTemplate chat_template_;
  std::unique_ptr<decoder::CausalDecoder> decoder_;
  std::size_t context_tokens_ = 0;
  std::optional<decoder::OutputMatrix> label_head_;  // the side file's 32 rows, when present
  std::vector<int32_t> head_rows_;                   // label order → row of the head in use
};

}  // namespace

std::unique_ptr<runtime::Engine> make_jemm_engine(const std::filesystem::path& model_dir,
                                                  const JemmSettings& settings) {
  return std::make_unique<JemmEngine>(model_dir, settings);
}

}  // namespace s1::decide
