#pragma once
// The LFM2.5-350M candidate-likelihood contract (models.md §4.18; reference: ThinkFlowLab/system1-omni
// src/models/lfm2/{engine.py,worker.py}, adapted there from notnotsamuel/LFM2.5-350M-RLCD @ deb589d8).
// The checkpoint is LiquidAI/LFM2.5-350M, an LFM2 hybrid decoder (model/lfm2).
//
//   prompt   per question, a closed JSON schema with one string field "answer" whose enum is the
//            option names and whose description is json.dumps({"instructions": …, "criteria": …});
//            the system message is the fixed extraction instruction, "\n" and json.dumps(schema)
//            (Python's default separators, ensure_ascii=False); the user message is the state (a
//            string as-is, objects and arrays as json.dumps); the chat template with the generation
//            prompt, then "{\n" (the assistant opening the object), tokenised whole.
//   readout  each option's continuation is the field suffix '  "answer": ' and the option's
//            json.dumps(name) + "\n", each tokenised on its own; its score is the sum over the value
//            tokens of the full-vocabulary log-softmax (no length normalisation); softmax across the
//            options (T = 1), argmax with the earliest option winning ties, normalised-entropy
//            confidence (1.0 for one option). Uncalibrated.
//   batching one prefill of the prompt per question; its state is shared (never modified) by every
//            option's branch, and the branches run together in batches of candidate_batch_size.
//   limits   choice only (400 unsupported_question_type), 1–255 options; usage counts each
//            question's prompt once plus every option's suffix and value tokens.

#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "api/errors.h"
#include "api/request.h"
#include "api/response.h"
#include "backend/cpu/precision.h"
#include "model/checkpoint/config_reader.h"
#include "runtime/engine.h"
#include "text/chat_template.h"

namespace s1::decide {

inline constexpr std::string_view lfm2_candidates_contract = "lfm2-candidate-likelihood";
inline constexpr std::size_t lfm2_candidates_max_options = 255;

struct Lfm2CandidatesSettings {
  std::string name = "lfm2.5-350m";
  std::vector<std::string> aliases;
  std::string description = "LFM2.5-350M: choice by candidate log-likelihood of each option's JSON value";
  backend::cpu::Precision precision = backend::cpu::Precision::fp32;
  // Option branches run per forward pass; any value gives the same answers (the prefix state is
  // shared, never modified), it only bounds the activations held at once.
  std::size_t candidate_batch_size = 64;
};

// Reads this contract's members of an s1serve.json whose "contract" member was already read (name,
// aliases, description, precision "fp32"|"bf16", candidate_batch_size ≥ 1); unknown members are
// load errors naming the file and key.
Lfm2CandidatesSettings read_lfm2_candidates_settings(checkpoint::ConfigReader& decision_file);

// json.dumps(schema, ensure_ascii=False) of one choice question's schema.
std::string lfm2_candidates_schema(const api::Question& question);

// The two chat messages (system, user) of one choice question. Throws std::invalid_argument for a
// question that is not a choice with 1–255 options.
std::vector<text::ChatMessage> lfm2_candidates_messages(const api::Json& state, const api::Question& question);

// What follows the rendered chat prompt before any option: the assistant opening the object.
std::string_view lfm2_candidates_prompt_tail();
// The field suffix every option's continuation starts with: '  "answer": '.
std::string_view lfm2_candidates_field_suffix();
// An option's value: json.dumps(name, ensure_ascii=False) + "\n".
std::string lfm2_candidates_value(const api::ChoiceOption& option);

// One choice answer from the options' log-likelihoods: softmax (T = 1), argmax with the earliest
// option winning ties, normalised-entropy confidence (1.0 for one option).
api::Result<api::Answer> lfm2_candidates_answer(std::span<const double> log_likelihoods);

// Loads the decoder, tokenizer.json and chat template of `model_dir`. Throws checkpoint::LoadError or
// text::TokenizerLoadError naming the file and the problem.
std::unique_ptr<runtime::Engine> make_lfm2_candidates_engine(const std::filesystem::path& model_dir,
                                                             const Lfm2CandidatesSettings& settings);

}  // namespace s1::decide
