#pragma once
// The StartLux-Decision v1.1 4B Instant contract (models.md §4.3; reference: StartLuxLabs/StartLux-
// Decision startlux_decision/model.py and docs/inference.md). The checkpoint is a Qwen3.5-4B (VL)
// fine-tune; only its decoder and the letter rows of its output embedding are used.
//
//   prompt   one per question with the full state, rendered as the package's jevfmt renders it
//            (startlux_prompt.h), through the checkpoint's chat template with thinking off;
//   readout  the final-norm hidden row at the last prompt token × the fp32 output rows of the letters
//            of the listed options (decision_config.json letter_token_ids, A–Z), divided by the
//            question type's temperature (temperature_by_type), softmax;
//   answers  choice: argmax, TypeSafe confidence (p_max − 1/n)/(1 − 1/n); score: expected level,
//            TypeSafe score confidence; noul: p(true), no confidence. A choice with one option is
//            rendered, run and counted as the API asks (the reference answers it without the model;
//            the answer, p = 1 and confidence 1, is the same);
//   wide     a choice with more than 26 options is decided in rounds (wide_choice.h) with the
//            checkpoint's wide_choice settings;
//   limits   choice 1–255 options, score 2–10 levels, noul; text only (images are refused by the API
//            layer until the vision tower lands); prompts within the checkpoint's context (or
//            s1serve.json context_tokens).
//
// Execution: every prompt starts with the chat header, the system message and the evidence; the
// longest common prefix of all first-round prompts (and of each wide question's text up to
// "Options:\n", so that its later rounds share it too) runs once and every row branches from that one
// state, later wide-choice rounds included.
//
// Variants this contract does not serve (AutoThink, which thinks before answering, and the 27B) are
// refused at load by name.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "api/errors.h"
#include "api/request.h"
#include "api/response.h"
#include "backend/cpu/precision.h"
#include "decide/wide_choice.h"
#include "model/checkpoint/config_reader.h"
#include "runtime/engine.h"

namespace s1::decide {

inline constexpr std::string_view startlux_contract = "startlux-instant";
inline constexpr std::string_view startlux_decision_file = "decision_config.json";

// The checkpoint's decision_config.json.
struct StartLuxDecisionConfig {
  std::vector<int32_t> letter_token_ids;  // A..Z
  double choice_temperature = 1.0;
  double noul_temperature = 1.0;
  double score_temperature = 1.0;
  WideChoiceConfig wide_choice;  // the reference's defaults when the file has none
  std::optional<std::string> release_date;

  [[nodiscard]] double temperature(api::QuestionType type) const;
};

// Reads decision_config.json strictly: letter_token_ids (26 ids), temperature_by_type with exactly
// choice, noul and score (each > 0), optional wide_choice {group, keep, residual} whose rounds must
// always narrow, optional release_date. Anything else, or a bad value, is a checkpoint::LoadError
// naming the file and the key.
StartLuxDecisionConfig read_startlux_decision_config(const std::filesystem::path& path);

struct StartLuxSettings {
  std::string name = "startlux-decision-v1.1-4b-instant";
  std::vector<std::string> aliases;
  std::string description = "StartLux-Decision v1.1 4B Instant: typed decisions by option-letter logits";
  backend::cpu::Precision precision = backend::cpu::Precision::fp32;
  std::size_t context_tokens = 0;  // 0: the checkpoint's max_position_embeddings
};

// Reads this contract's members of an s1serve.json whose "contract" member was already read (name,
// aliases, description, precision "fp32"|"bf16", context_tokens); unknown members are load errors.
StartLuxSettings read_startlux_settings(checkpoint::ConfigReader& decision_file);

// Throws checkpoint::LoadError when a name (served name, alias or directory) says the checkpoint is an
// AutoThink or a 27B variant, which this contract does not serve.
void check_startlux_variant(std::span<const std::string> names);

// A choice answer from a finished wide-choice distribution: first argmax, TypeSafe confidence.
api::Answer startlux_choice_from_probabilities(std::vector<double> probabilities);

// Loads the decoder, tokenizer.json, chat template and decision_config.json of `model_dir`. Throws
// checkpoint::LoadError or text::TokenizerLoadError naming the file and the problem (a template
// without the thinking switch, letter ids that disagree with the tokenizer, a refused variant).
std::unique_ptr<runtime::Engine> make_startlux_engine(const std::filesystem::path& model_dir,
                                                      const StartLuxSettings& settings);

}  // namespace s1::decide
