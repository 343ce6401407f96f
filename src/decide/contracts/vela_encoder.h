#pragma once
// The Vela 2.0 0.3B contract (models.md §4.17; vllm-sr/Vela-2.0-0.3B, the "vela2-unified" package
// format; docs/models/vela-2.0-0.3b.md lists what is verified and what is assumed). A ModernBERT
// encoder (model/modernbert) reads every question of a request in ONE bidirectional sequence:
//
//   sequence <bos> ([Q] instructions ([O] option)… [ABS]?)… [SEP_SCHEMA] ([SEG_role] part)… <eos>
//            markers inserted by id (text can never spell one: the tokenizer's marker entries are
//            dropped before loading it), text tokenised without special tokens.
//   parts    a state object whose members are all among "request", "source", "answer" becomes the
//            parts user, context and answer (in that order); any other state is one user part
//            (a string as-is, else Python's json.dumps). Every question pools over all parts.
//   options  "name" or "name: description" of vela_named_options (noul "no: …", "yes: …"; score the
//            level texts). [ABS] follows the options of the types in "abstain_types" (default:
//            choice and noul, as the runtime's reader); its logit never enters the distribution.
//   readout  model/heads/vela_readout.h per option marker; p = softmax(logits / T) over the real options in
//            float64, T per type from calibration.json (absent: 1.0; noul reads as a choice at the choice
//            temperature); noul p(yes), with the
//            package's optional noul calibration sigmoid(logit(p)/T + b) when it says "default";
//            choice argmax (earliest on ties), confidence p₁ − p₂ (top-2 margin); score Σ i·pᵢ,
//            confidence 1 − Var(i)/((n² − 1)/12) clamped to [0, 1].
//   limits   a sequence is at most max_length tokens (config.json, ≤ the encoder's positions): the
//            parts are cut in order by what is over (vllm-sr's layout.py fit), and a cut one-part
//            state is read instead in windows of the kept length overlapping by
//            min(window_overlap, kept/4), option logits averaged over them; questions and options
//            are never cut: when they leave no room for the state, 400 max_tokens_exceeded.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/errors.h"
#include "api/request.h"
#include "api/response.h"
#include "backend/cpu/precision.h"
#include "model/checkpoint/config_reader.h"
#include "model/heads/vela_readout.h"
#include "model/encoder/encoder.h"
#include "runtime/engine.h"
#include "text/tokenizer.h"

namespace s1::decide {

inline constexpr std::string_view vela_encoder_contract = "vela-0.3b";

struct VelaSettings {
  std::string name = "vela-2.0-0.3b";
  std::vector<std::string> aliases;
  std::string description = "Vela 2.0 0.3B: ModernBERT marker encoder with cosine decision readouts (vllm-sr)";
  backend::cpu::Precision precision = backend::cpu::Precision::fp32;
  std::set<api::QuestionType> abstain_types{api::QuestionType::choice, api::QuestionType::noul};
};

// Reads this contract's members of an s1serve.json whose "contract" member was already read (name,
// aliases, description, precision, abstain_types); unknown members are load errors.
VelaSettings read_vela_settings(checkpoint::ConfigReader& decision_file);

// The eight marker tokens of the vela2-unified format, by id.
struct VelaMarkers {
  int32_t q = 0, o = 0, abstain = 0, sep_schema = 0, e = 0;
  int32_t seg_user = 0, seg_context = 0, seg_answer = 0;
};

// What config.json of a vela2-unified package says.
struct VelaPackage {
  std::shared_ptr<const encoder::EncoderSpec> encoder;  // the ModernBERT encoder_config
  std::size_t projection = 0;
  heads::VelaReadout readout = heads::VelaReadout::both;
  std::vector<std::string> marker_names;  // as the tokenizer spells them
  VelaMarkers markers;
  int32_t bos = 0, eos = 0;
  std::size_t max_length = 0;      // whole sequence, schema included
  std::size_t window_overlap = 0;  // tokens two windows over a cut part share, at most a quarter of one
};

// Throws checkpoint::LoadError naming the file and key.
VelaPackage read_vela_package(const std::filesystem::path& config_file);

// calibration.json: per-type temperatures and the optional noul calibration.
struct VelaCalibration {
  double choice = 1.0, noul = 1.0, score = 1.0;
  struct Noul {
    double temperature = 1.0, bias = 0.0;
  };
  std::optional<Noul> noul_calibration;  // set only when the file says to apply it by default
};

VelaCalibration read_vela_calibration(const std::filesystem::path& calibration_file);

struct VelaPart {
  std::string role;  // user, context, answer
  std::string text;
};

std::vector<VelaPart> vela_parts(const api::Json& state);

// vllm-sr's truncation (families/vela2/layout.py fit) when every question reads every part: while
// `fixed` plus the parts' lengths is over `room`, each part in order is cut by what is over, keeping
// a budget of at least one token (of which a shorter part keeps only what it has). The budgets;
// nullopt when the rest leaves no room. Both Vela 2.0 layouts cut their parts with it.
std::optional<std::vector<std::size_t>> vela_fit_parts(std::span<const std::size_t> lengths, std::size_t fixed,
                                                       std::size_t room);

inline constexpr std::string_view vela_noul_default_no = "No. The statement or question is not satisfied.";
inline constexpr std::string_view vela_noul_default_yes = "Yes. The statement or question is satisfied.";

// A question's options as (name, description) the way vllm-sr's runtime reads System One for the
// Vela 2.0 packages (families/vela2/request.py): choice its criteria (null → ""); noul "no" and
// "yes" described by the criteria's false and true texts or the defaults above; score one option
// per level named by its text, no description.
std::vector<std::pair<std::string, std::string>> vela_named_options(const api::Question& question);

// The 0.3B option texts in marker order: "name" or "name: description".
std::vector<std::string> vela_option_texts(const api::Question& question);

struct VelaSequence {
  std::vector<int32_t> ids;
  std::vector<heads::VelaQuestionSlots> questions;  // request order
  std::vector<std::size_t> real_options;            // per question: its option markers before any [ABS]
  std::size_t state_tokens = 0;                     // before any cut
  std::size_t state_tokens_kept = 0;
};

// The request's sequences: one, or, when a one-part state had to be cut, the overlapping windows
// over it that replace the cut sequence. The tokenizer must already be without its marker entries.
// 400 max_tokens_exceeded when the questions and options leave no room for the state.
api::Result<std::vector<VelaSequence>> vela_pack_request(const text::Tokenizer& tokenizer, const VelaPackage& package,
                                                         const std::set<api::QuestionType>& abstain_types,
                                                         const api::DecisionRequest& request);

// p₁ − p₂ of the two largest probabilities; 1.0 for one option.
double top2_margin_confidence(std::span<const double> probabilities);
// 1 − Var(i)/((n² − 1)/12), the variance of the level index under p over a uniform one's, clamped
// to [0, 1].
double variance_confidence(std::span<const double> probabilities);

// The answer from one question's real option logits in marker order (noul: false, true).
api::Result<api::Answer> vela_answer(api::QuestionType type, std::span<const float> option_logits,
                                     const VelaCalibration& calibration);

// Loads `model_dir` (config.json, calibration.json, model.safetensors, tokenizer.json). Throws
// checkpoint::LoadError or text::TokenizerLoadError.
std::unique_ptr<runtime::Engine> make_vela_engine(const std::filesystem::path& model_dir, const VelaSettings& settings);

}  // namespace s1::decide
