#pragma once
// The decision types llama.cpp's server reads from a GGUF's `<arch>.decision.type`
// (tools/server/server-decision.cpp, ggml-org/llama.cpp at 3cafcc83c182b8400043cb1fedb9550c148a64cf),
// for those that answer from label-token logits at the last prompt position:
//
//   openjev       labels A–Z then a–z (each must be one token), noul options shown true first;
//   lev           labels A–Z then AA…ZZ (single tokens only, at most 255) given to the template as
//                 each option's "label"; a choice runs twice, the second time with its options
//                 reversed, and the two softmaxes are averaged; noul is read on a 0–8 rating scale
//                 (labels A–I) as Σ pᵢ·i/8; every object of the template's input has sorted keys;
//   nimble        lev's labels, and the template also gets every question of the request;
//   pplx-decider  lev's labels;
//   lfm2-d1       per question label groups (a code and its spaced form, or yes/Yes/YES and
//                 no/No/NO for noul, the digit for score) scored by the group's highest logit,
//                 noul options shown true first.
//
// The prompt is the GGUF's `tokenizer.chat_template.systemone` Jinja template rendered with the
// question (id, type, instructions, state, options, images) as llama.cpp gives it, tokenised with
// the special tokens it spells. Answers: per variant softmax(s / T), T from
// `<arch>.decision.temperature.<question type>[.<bucket of the option count>]` (default 1), averaged
// over the variants; the linear confidences of the API contract (the same formulas as llama.cpp's).

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "decide/contracts/label_token.h"
#include "runtime/engine.h"

namespace s1::decide {

enum class GgufDecisionType { openjev, lev, nimble, pplx_decider, lfm2_d1 };

// The type `<arch>.decision.type` names, or nullopt when s1serve does not serve it.
std::optional<GgufDecisionType> gguf_decision_type_named(std::string_view name);
std::string_view gguf_decision_type_name(GgufDecisionType type);

struct GgufDecisionSettings {
  std::string name;
  std::vector<std::string> aliases;
  std::string description;
  GgufDecisionType type = GgufDecisionType::openjev;
  // "<question type>" or "<question type>.<bucket>" → temperature (> 0).
  std::map<std::string, double, std::less<>> temperatures;
  backend::cpu::Precision precision = backend::cpu::Precision::fp32;
  std::size_t context_tokens = 0;  // 0: the checkpoint's context length
};

// The temperature of a question with `option_count` options (noul: 2), as llama.cpp looks it up:
// the bucketed key first, then the question type's, else 1.
double gguf_decision_temperature(const GgufDecisionSettings& settings, api::QuestionType type,
                                 std::size_t option_count);

// `model.chat_template` is the systemone template. Throws checkpoint::LoadError naming
// `model.tokenizer_source` when a label the type needs is not a single token of the vocabulary.
std::unique_ptr<runtime::Engine> make_gguf_decision_engine(ChatDecoder model, GgufDecisionSettings settings);

}  // namespace s1::decide
