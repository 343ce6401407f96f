#pragma once
// The Cua-S1 4B 0.2 `text` contract (models.md §4.1; pinned upstream: trycua/cua 0e75660c
// libs/cua-s1 FourBModel, mapped onto /v1/systemone as ThinkFlowLab/system1-omni
// src/models/cua_s1/text/contract.py does). The checkpoint is Qwen3.5-4B with the text LoRA merged.
//
//   prompt   per question: the fixed system message, then one user turn
//              [Goal: <instructions>\n\n]App: Cua Driver\nTask family: closed-candidate decision\n\n
//              Accessibility tree:\n<state>\n\nOptions:\n<A. Decision "<label>" -> select lines>\n\n
//              Answer with a single letter.
//            state and instructions: a string as-is, objects and arrays as Python's json.dumps with
//            ensure_ascii=False and its default separators; each option label is the criteria value
//            (the option name when null) escaped as json.dumps(…)[1:-1]. The chat template with the
//            generation prompt and thinking left open (…<|im_start|>assistant\n<think>\n).
//   readout  the LM-head rows of the letters A–Z at the last position, each logit rounded to BF16
//            (the reference computes them by a BF16 GEMM), softmax without temperature,
//            normalised-entropy confidence;
//   limits   choice only (400 unsupported_question_type), 1–26 options (400 too_many_options),
//            prompts of at most 16,384 tokens.
//
// Every question's prompt is tokenised whole; their longest common token prefix runs once and every
// question branches from it. The goal comes before the state in this layout, so the state is shared
// only between questions with equal instructions.

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
#include "decide/contract_common.h"
#include "model/checkpoint/config_reader.h"
#include "runtime/engine.h"
#include "text/chat_template.h"

namespace s1::decide {

inline constexpr std::string_view cua_s1_contract = "cua-s1-text";
inline constexpr std::size_t cua_s1_max_options = 26;
inline constexpr std::size_t cua_s1_max_prompt_tokens = 16384;

struct CuaS1Settings {
  std::string name = "cua-s1-4b-0.2";
  std::vector<std::string> aliases;
  std::string description = "Cua-S1 4B 0.2 (text adapter): closed-candidate computer-use decisions";
  backend::cpu::Precision precision = backend::cpu::Precision::fp32;
  LogitRounding logit_rounding = LogitRounding::bf16;
};

// Reads this contract's members of an s1serve.json whose "contract" member was already read
// (name, aliases, description, precision "fp32"|"bf16", logit_rounding "bf16"|"none"); unknown
// members are load errors naming the file and key.
CuaS1Settings read_cua_s1_settings(checkpoint::ConfigReader& decision_file);

// The system message, byte for byte as upstream's SYSTEM_PROMPT.
std::string_view cua_s1_system_message();

// The option label shown between the quotes of an option line.
std::string cua_s1_option_label(const api::ChoiceOption& option);

// The two chat messages (system, user) of one choice question. Throws std::invalid_argument for a
// question that is not a choice with 1–26 options.
std::vector<text::ChatMessage> cua_s1_messages(const api::Json& state, const api::Question& question);

// One choice answer from the letter logits of its options: rounding, softmax (T = 1), argmax with the
// earliest option winning ties, normalised-entropy confidence (1.0 for one option).
api::Result<api::Answer> cua_s1_answer(std::span<const double> letter_logits, LogitRounding rounding);

// Loads the decoder, tokenizer.json and chat template of `model_dir`. Throws checkpoint::LoadError or
// text::TokenizerLoadError naming the file and the problem (e.g. a letter that is not a single token).
std::unique_ptr<runtime::Engine> make_cua_s1_engine(const std::filesystem::path& model_dir,
                                                    const CuaS1Settings& settings);

}  // namespace s1::decide
