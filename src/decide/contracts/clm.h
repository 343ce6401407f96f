#pragma once
// The CLM-v0.1-8B contract (models.md §2.D, §4.19; upstream Contrastive-LM/CLM src/clm/{schema,
// engine,embedder,heads}.py, texts pinned as ThinkFlowLab/system1-omni src/models/clm pins them). A
// frozen Qwen3-8B embeds texts; two projection heads and a scaled cosine decide.
//
//   texts      per question one state text and one text per option (clm.schema):
//                state   strip(to_text(state)) + "\n\n" + strip(to_text(instructions)), either alone
//                        when the other is empty;
//                choice  to_text(description), the option name when it is null or "";
//                score   to_text(level);
//                noul    "true: " + (to_text(true description) | "Yes. This is true: " + instructions
//                        | "true"), likewise "false: " + (… | "No. This is false: " + … | "false");
//              to_text: strings as-is, true/false, numbers as Python's str(), an object as "key: value"
//              fields (top level separated by a blank line, nested ones indented two spaces per level),
//              an array as one "- item" line per element.
//   embedding  the text's tokens (tokenizer.json, as Transformers tokenises it; an optional
//              append_token after them), the final-norm hidden state at the last token,
//              L2-normalised. State texts of one request share their longest common token prefix
//              (run once, every question branched from it); each distinct candidate text is embedded
//              alone and its action-head projection cached across requests (LRU keyed by the exact
//              text).
//   readout    cᵢ = cos(state_head(s), action_head(candᵢ)) (heads in fp32, model/heads/clm_head.h);
//              p = softmax(min(exp(logit_scale), max_scale) · c / T); noul = p(true); score = Σ i·pᵢ;
//              choice = argmax (earliest wins ties); confidence = p_max − mean(rest), clamped to
//              [0, 1], 1 for a single option.
//   usage      input_tokens = the state texts' shared prefix once + each state's own tokens + the
//              tokens of every distinct candidate text of the request, whether or not it was cached
//              (deterministic: a cache hit never changes the response).
//   limits     a text over max_text_tokens (default 2048, the reference encoder's window) is a 400
//              max_tokens_exceeded where the reference cuts it; a text that renders empty has nothing
//              to embed and is a 422.

#include <cstddef>
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
#include "model/checkpoint/config_reader.h"
#include "runtime/engine.h"

namespace s1::decide {

inline constexpr std::string_view clm_contract = "clm";

struct ClmSettings {
  std::string name = "clm-v0.1-8b";
  std::vector<std::string> aliases;
  std::string description = "CLM-v0.1-8B: Qwen3-8B embeddings with contrastive state and action heads";
  backend::cpu::Precision precision = backend::cpu::Precision::fp32;  // of the Qwen3 encoder; the heads are fp32
  std::string heads_file = "clm_heads.safetensors";
  double logit_scale = 0.0;  // log of the cosine scale, from the .pt checkpoint (4.6132 for v0.1)
  double max_scale = 100.0;  // heads.py: exp(logit_scale).clamp(max=100)
  bool head_residual = false;
  double temperature = 1.0;
  std::size_t max_text_tokens = 2048;
  std::optional<std::string> append_token;  // a token appended to every text before pooling
  std::size_t candidate_cache_entries = 4096;
};

// Reads this contract's members of an s1serve.json whose "contract" member was already read;
// logit_scale is required, unknown members are load errors naming the file and key.
ClmSettings read_clm_settings(checkpoint::ConfigReader& decision_file);

// clm.schema's to_text, state_text and the candidate texts in API label order (options, levels, or
// (true, false) for noul).
std::string clm_to_text(const api::Json& value);
std::string clm_state_text(const api::Json& state, const api::Json& instructions);
std::vector<std::string> clm_candidate_texts(const api::Question& question);

// min(exp(logit_scale), max_scale).
double clm_scale(double logit_scale, double max_scale);

// One answer from a question's cosines in label order; 500 internal_error when anything is not finite.
api::Result<api::Answer> clm_answer(api::QuestionType type, std::span<const double> cosines, double scale,
                                    double temperature);

// Loads the Qwen3 checkpoint, tokenizer.json and the heads file of `model_dir`. Throws
// checkpoint::LoadError or text::TokenizerLoadError naming the file and the problem.
std::unique_ptr<runtime::Engine> make_clm_engine(const std::filesystem::path& model_dir, const ClmSettings& settings);

}  // namespace s1::decide
