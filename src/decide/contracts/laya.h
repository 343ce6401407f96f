#pragma once
// The LAYA contract (models.md §4.16; the pinned reference is laya==0.3.20, Agent.system_one, for the
// checkpoint convaiinnovations/laya @ 55cf4c4e; tools/reference/laya_contract.py runs it). A
// ModernBERT-large encoder with a decision head (model/heads/laya_head.h) answers every question type:
//
//   row      per question, at most max_len (512) tokens:
//              [CLS] "<type> question: <instructions>" [SEP] ([MASK] " <option>")… [SEP] <state> [SEP]
//            each option at most 48 tokens after its marker; header + options within head_max_len
//            (192): when the options leave less than 16 tokens, each shrinks to max(4, 176/n) and the
//            header keeps at least 8; the state fills the rest — its tail when the state is a JSON
//            array (newest turns last), else its head. "[MASK]" spelled in any text becomes a space.
//   text     a string as-is, anything else as Python's json.dumps(…, ensure_ascii=False) with its
//            default separators; absent instructions render as laya renders None ("null").
//   options  choice "name" or "name: <description>" (null or "" = no description); score
//            "level i: <level>"; noul "false: <false text>", "true: <true text>", defaulting to
//            "no, the statement does not hold" / "yes, the statement holds".
//   readout  one scorer logit per marker; T = temperature_by_options["<type>:<bucket>"] (buckets 2,
//            3-5, 6-10, 11+ by option count), else temperature[type], clamped to [0.5, 5]; float32
//            softmax; choice: first argmax; score: Σ i·pᵢ; noul: p(true) (marker order false, true);
//            confidence: normalised entropy (1 − H/ln n, 1.0 for one option); noul max(p, 1 − p).
//   rounding every probability, score and confidence rounded to 4 decimals (Python round, half to
//            even on the exact value) as the reference worker does: a deliberate per-model
//            difference from the contract's full-precision numbers.
//   limits   at most max_questions (16) questions and max_markers (2,048) options per request
//            (413 payload_too_large); options that push a marker past the row (400 too_many_options).
//   batch    every question of a request is one row of one unpadded batch.

#include <cstddef>
#include <cstdint>
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
#include "model/heads/laya_head.h"
#include "runtime/engine.h"
#include "text/tokenizer.h"

namespace s1::decide {

inline constexpr std::string_view laya_contract = "laya";

struct LayaSettings {
  std::string name = "laya-english";
  std::vector<std::string> aliases{"english"};
  std::string description = "LAYA English: ModernBERT-large encoder with a decision head (convaiinnovations/laya)";
  backend::cpu::Precision precision = backend::cpu::Precision::fp32;
  std::size_t max_questions = 16;
  std::size_t max_markers = 2048;
};

// Reads this contract's members of an s1serve.json whose "contract" member was already read (name,
// aliases, description, precision, max_questions, max_markers); unknown members are load errors.
LayaSettings read_laya_settings(checkpoint::ConfigReader& decision_file);

// The option texts of one question in marker order (noul: false, then true).
std::vector<std::string> laya_option_texts(const api::Question& question);

// The special tokens and budgets a row is packed with.
struct LayaPacking {
  int32_t cls = 0, sep = 0, mask = 0;
  std::size_t max_len = 512;
  std::size_t head_max_len = 192;
};

struct LayaRow {
  std::vector<int32_t> ids;
  std::vector<std::size_t> markers;
  laya::QuestionKind kind = laya::QuestionKind::choice;
};

// The state's token ids (rendered, "[MASK]" replaced), tokenised once per request.
std::vector<int32_t> laya_state_ids(const text::Tokenizer& tokenizer, const api::Json& state);

// One question's row. 400 too_many_options when a marker would fall outside the row.
api::Result<LayaRow> laya_pack_question(const text::Tokenizer& tokenizer, const LayaPacking& packing,
                                        std::span<const int32_t> state_ids, bool state_is_array,
                                        const api::Question& question);

// Python's round(x, 4): the exact binary value rounded to 4 decimals, halves to even.
double round_to_4_decimals(double value);

// The temperature laya applies to a question of `kind` with `options` markers (bucket, fallback, clamp).
double laya_temperature(const laya::AgentConfig& config, laya::QuestionKind kind, std::size_t options);

// The answer from one question's raw marker logits (noul: false, true), with laya's float32 maths and
// rounding. noul answers carry p(true) first, as api::Answer does, and max(p, 1 − p) as confidence.
api::Result<api::Answer> laya_answer(laya::QuestionKind kind, std::span<const float> marker_logits,
                                     double temperature);

// Loads `model_dir` (rl_agent_config.json, model.safetensors, encoder/config.json, tokenizer/). Throws
// checkpoint::LoadError or text::TokenizerLoadError.
std::unique_ptr<runtime::Engine> make_laya_engine(const std::filesystem::path& model_dir, const LayaSettings& settings);

}  // namespace s1::decide
