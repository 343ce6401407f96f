#pragma once
// The JEMM contract for text requests (models.md §4.5; reference ypcypc/JEMM 6822fe0f jemm/contract.py
// and jemm/systemone.py, as ThinkFlowLab/system1-omni src/models/jemm/native/src/contract.rs ports
// them). JEMM is Qwen3.8-27B with a LoRA adapter; s1serve runs it on the Qwen3.5 hybrid decoder.
//
//   prompt   per question: the system message, then one user turn
//              State:\n<state>\n\nQuestion: <instructions>\n\nCandidates:\n<A) … lines>\n\n
//              Answer with exactly one candidate label.
//            state: a string as given, objects/arrays as compact json.dumps (ensure_ascii=False),
//            then strip(); instructions: str() (repr for containers), whitespace flattened;
//            candidates: choice descriptions (an object's "description" member, str() of anything
//            else; a tool spec when the value's "action" has "tool_name"), noul "yes"/"no" sides,
//            score levels ("level i" when empty). The chat template with the generation prompt and
//            thinking off.
//   readout  the last position's final-norm row × 32 untied LM-head rows (labels A–Z then 0–5), each
//            logit rounded to BF16 as the reference's BF16 GEMM leaves it; softmax with
//            T = 1.3480874159655591; choice = first argmax, confidence = p_max (score too);
//            noul = p(yes); score = expected level.
//   limits   at most 32 candidates (400 too_many_options), prompts of at most 8,192 tokens (400
//            max_tokens_exceeded, never truncated). Images are refused by the API layer (400
//            unsupported_media) until the vision tower lands.
//
// The 32 rows come from jemm_lm_head.safetensors (tensor "weight", [32, hidden], the reference
// export's side file) when the directory has it, else from the checkpoint's LM head. A PEFT adapter
// in the directory (adapter_config.json + adapter_model.safetensors, as the reference export keeps
// JEMM's FP32 LoRA) is applied unmerged: every adapted projection adds its fp32 low-rank term. The
// export's manifest jemm_export.json, when present, must agree with s1serve's rendering of the chat
// template (chat_prefix, chat_suffix), the label ids and the temperature.
//
// Every question's prompt is tokenised whole; their longest common token prefix (the chat header,
// system message and state) runs once and every question branches from it.

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

inline constexpr std::string_view jemm_contract = "jemm";
// Candidate labels in order: A–Z, then 0–5.
inline constexpr std::string_view jemm_labels = "ABCDEFGHIJKLMNOPQRSTUVWXYZ012345";
inline constexpr std::size_t jemm_max_candidates = 32;
inline constexpr std::size_t jemm_max_prompt_tokens = 8192;
// The reference's text calibration (decision_config.json "temperature").
inline constexpr double jemm_text_temperature = 1.3480874159655591;
// The reference export's side file with the 32 label rows of the untied LM head.
inline constexpr std::string_view jemm_label_head_file = "jemm_lm_head.safetensors";
inline constexpr std::string_view jemm_label_head_tensor = "weight";

struct JemmSettings {
  std::string name = "jemm";
  std::vector<std::string> aliases;
  std::string description = "JEMM (MaestroYan/JEMM on Qwen3.8-27B): calibrated candidate decisions, text";
  backend::cpu::Precision precision = backend::cpu::Precision::fp32;
  LogitRounding logit_rounding = LogitRounding::bf16;
};

// Reads this contract's members of an s1serve.json whose "contract" member was already read (name,
// aliases, description, precision "fp32"|"bf16", logit_rounding "bf16"|"none"); unknown members are
// load errors naming the file and key.
JemmSettings read_jemm_settings(checkpoint::ConfigReader& decision_file);

// The reference's SYSTEM message, byte for byte.
std::string_view jemm_system_message();

// The text after "X) " on one candidate line, for each of the question's candidates in label order.
std::vector<std::string> jemm_candidate_texts(const api::Question& question);

// A tool-spec candidate: "name — summary | params: a*, b=default" from the JSON text of a tool
// description, or the flattened text when it is not a JSON object with a "name".
std::string jemm_tool_text(std::string_view description);

// The two chat messages (system, user) of one question. Throws std::invalid_argument for a question
// with more than 32 candidates.
std::vector<text::ChatMessage> jemm_messages(const api::Json& state, const api::Question& question);

// One answer from the question's label logits (in label order): optional BF16 rounding, softmax with
// the text temperature, first-argmax choice, p_max confidence, p(yes) for noul, expected level.
api::Result<api::Answer> jemm_answer(api::QuestionType type, std::span<const double> label_logits,
                                     LogitRounding rounding);

// Loads the decoder, tokenizer.json, chat template and label rows of `model_dir`. Throws
// checkpoint::LoadError or text::TokenizerLoadError naming the file and the problem (a label that is
// not a single token, a side file of the wrong shape, an adapter the decoder cannot apply).
std::unique_ptr<runtime::Engine> make_jemm_engine(const std::filesystem::path& model_dir,
                                                  const JemmSettings& settings);

}  // namespace s1::decide
