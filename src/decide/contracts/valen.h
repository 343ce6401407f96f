#pragma once
// The Valen-Preview-0923 contract (models.md §4.12; pinned upstream: Liuziyu77/Valen 750bfcf, served as
// ThinkFlowLab/system1-omni src/models/valen serves it). The checkpoint is a Qwen3.5 decoder with
// Valen's LM LoRA merged, beside valen_head.safetensors (the trained bilinear DecisionHead:
// head.decision.weight and head.candidate.weight, [projection_dim, hidden]).
//
//   prompt   Valen's compiler: the state once, as the chat template renders one user message of it
//            without the generation prompt (a string as-is, objects and arrays as Python's
//            json.dumps(ensure_ascii=False)); then per question its own branch, tokenised piece by
//            piece: "<|im_start|>user\n", "Task: choice\nQuestion: <instructions>\nCandidates:\n",
//            per candidate "<name>: <description>" (a null description is the name) and "\n", then
//            "Decision:". No truncation: a branch over 8,192 tokens is refused.
//   readout  final-norm hidden rows at each candidate's endpoint (its piece's last token) and at the
//            Decision position (the last token); heads::BilinearHead gives one fp32 logit each;
//            softmax at temperature 1; choice = argmax (first wins), confidence 1 for one candidate,
//            else max(0, (p_max − 1/K)/(1 − 1/K)).
//   limits   choice only (400 unsupported_question_type); ≤ 8 questions (413); 1–255 candidates;
//            instructions required and not blank, no blank description, no tokenizer control token in
//            any text, state, instructions and each description ≤ 16,384 characters and instructions
//            plus descriptions ≤ 16,384 (422, as the reference refuses them); an image state
//            {"image": …} is 400 unsupported_media until the image path lands.
//
// The reference runs each question's branch whole; here the state's tokens (rounded down to the
// hybrid's 64-token grid) run once and every question branches from them in one batch. usage counts
// the reference's logical tokens: the state once plus every question's own tokens.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/errors.h"
#include "api/request.h"
#include "decide/contract_common.h"
#include "model/checkpoint/config_reader.h"
#include "runtime/engine.h"
#include "text/tokenizer.h"

namespace s1::decide {

inline constexpr std::string_view valen_contract = "valen";
inline constexpr std::string_view valen_head_file = "valen_head.safetensors";
inline constexpr std::size_t valen_max_questions = 8;
inline constexpr std::size_t valen_max_length = 8192;
inline constexpr std::size_t valen_max_text_characters = 16384;

struct ValenSettings {
  std::string name = "valen-preview-0923";
  std::vector<std::string> aliases{"Valen-Team/Valen-Preview-0923", "valen"};
  std::string description = "Valen-Preview-0923: Qwen3.5-2B with Valen's bilinear decision head (choice only)";
  backend::cpu::Precision precision = backend::cpu::Precision::fp32;
};

// This contract's members of an s1serve.json whose "contract" member was already read: name, aliases,
// description, precision ("fp32" | "bf16", default bf16 where the CPU runs it, as the reference runs
// bf16). Any other member is a load error.
ValenSettings read_valen_settings(checkpoint::ConfigReader& decision_file);

// One question's branch after the state, as Valen's compiler builds it.
struct ValenBranch {
  std::vector<int32_t> tokens;         // the suffix after the state's tokens
  std::vector<std::size_t> endpoints;  // each candidate's last token, as an index into `tokens`
};

// What Valen's compiler reads of a request before tokenising: the state text, refusals as the
// reference gives them (see the header comment), `reserved` the tokenizer's control tokens.
api::Result<std::string> valen_state_text(const api::Json& state, const std::vector<std::string>& reserved);

// The tokenizer's control tokens a text may not spell: tokenizer_config.json's named special tokens
// (bos, eos, unk, sep, pad, cls, mask), additional_special_tokens and extra_special_tokens (what
// Transformers' all_special_tokens lists), and the four vision tokens.
std::vector<std::string> valen_reserved_tokens(const std::filesystem::path& model_dir);

// One question's branch: the pieces tokenised one by one with no special tokens added; 422 for the
// texts the reference refuses.
api::Result<ValenBranch> valen_branch(const text::Tokenizer& tokenizer, const api::Question& question,
                                      const std::vector<std::string>& reserved);

// Loads the decoder, tokenizer.json, the chat template and valen_head.safetensors of `model_dir`.
// Throws checkpoint::LoadError or text::TokenizerLoadError naming the file and the problem.
std::unique_ptr<runtime::Engine> make_valen_engine(const std::filesystem::path& model_dir,
                                                   const ValenSettings& settings);

}  // namespace s1::decide
