#pragma once
// The autotrust/JEV-27B-VL contract, text path (models.md §4.6; pinned upstream: the checkpoint repo's
// serve_decide.py @ f34b598, as ThinkFlowLab/system1-omni src/models/jev_vl/native ports it). The
// checkpoint is the export system1-omni's recipe/jev_vl/export_merged.py writes: the Qwen3.5/3.8
// language model with the LoRA merged, label_head.safetensors (the merged LM-head rows of the tokens
// read, float32) and jev_vl_export.json (per-kind temperatures, the 24-slot verbalizer ids and biases,
// the option-label table, max_length, the pins).
//
// Upstream answers one question per request, {kind, state, question, options}; each System One
// question is evaluated that way:
//   prompt   "[kind] <type>\n[state] <state>\n[question] <instructions>\n[options]\n<lines>\n[decision]:",
//            no chat template, tokenised whole with no special tokens. State: a string as-is, an object
//            as Python's json.dumps(ensure_ascii=False), an array part by part (strings as-is,
//            {"type": "text", "text": t} as t, anything else as json.dumps) with no separator.
//            Instructions: a string as-is, null as "", else json.dumps. Lines: choice "<label>) <option>"
//            with the export's labels (A, B, …) and option = name or "name: <description>"; noul the
//            fixed "false", "true"; score the fixed "0" … "5".
//   readout  the final-norm hidden row at the last token; z = (row·h in FP64 + slot bias) / T_kind over
//            the kind's tokens: noul slots 0–1 (false, true), score slots 2–7, choice the label ids with
//            slot 8 + i's bias for the first 16 options and none after; softmax in double.
//   answers  choice argmax (first wins) with the linear confidence; noul p(true); score Σ i·pᵢ with the
//            API's score confidence (API §5.1; upstream reports the argmax category, the mode of the
//            same probabilities).
//   limits   choice 2 to the label table's size (255 at most); score exactly 6 levels; noul without
//            criteria texts (its prompt has no place for them); a prompt over max_length is refused;
//            images are 400 unsupported_media until the image path lands.
//
// Every question's prompt is tokenised whole; their longest common token prefix (rounded down to the
// hybrid's 64-token grid) runs once and every question branches from it; usage counts that prefix once.

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

namespace s1::decide {

inline constexpr std::string_view jev_vl_contract = "jev-vl";
inline constexpr std::string_view jev_vl_export_file = "jev_vl_export.json";
inline constexpr std::string_view jev_vl_export_format = "jev-vl-text-merged/1";
inline constexpr std::string_view jev_vl_model_id = "autotrust/JEV-27B-VL";
inline constexpr std::size_t jev_vl_score_levels = 6;
inline constexpr std::size_t jev_vl_trained_choice_slots = 16;

// jev_vl_export.json, as export_merged.py writes it.
struct JevVlExport {
  double temperature_noul = 1.0, temperature_score = 1.0, temperature_choice = 1.0;
  std::vector<int64_t> verbalizer_ids;  // 24: noul 0–1, score 2–7, choice 8–23
  std::vector<double> verbalizer_bias;  // 24
  std::vector<std::string> labels;      // the option labels, A, B, …
  std::vector<int64_t> label_ids;
  std::string label_head_file;
  std::vector<int64_t> label_head_ids;  // the rows label_head_file must hold, in order
  std::size_t max_length = 16384;
};

// Reads and checks the export strictly (format, model_id, protocol, 24 slots with the upstream ranges,
// finite temperatures above 0, a label table whose first 16 ids are the choice slots, max_length
// 1–32,768); a bad or unknown member is a load error naming the file and the key.
JevVlExport read_jev_vl_export(const std::filesystem::path& path);

struct JevVlSettings {
  std::string name{jev_vl_model_id};
  std::vector<std::string> aliases{"jev-27b-vl", "JEV-27B-VL"};
  std::string description = "autotrust/JEV-27B-VL: verbalizer rows plus slot bias, per-kind temperatures (text)";
  backend::cpu::Precision precision = backend::cpu::Precision::fp32;
};

// This contract's members of an s1serve.json whose "contract" was already read: name, aliases,
// description, precision (default bf16 where the CPU runs it). Any other member is a load error.
JevVlSettings read_jev_vl_settings(checkpoint::ConfigReader& decision_file);

// One question's upstream prompt, or the refusal the mapping gives (see the header comment).
api::Result<std::string> jev_vl_prompt(const api::Json& state, const api::Question& question,
                                       const std::vector<std::string>& labels);

// The tokens a question of `type` with `count` labels reads, and their slot biases, in upstream's order
// (noul: false, true).
struct JevVlReadout {
  std::vector<int64_t> token_ids;
  std::vector<double> bias;
  double temperature = 1.0;
};
JevVlReadout jev_vl_readout(const JevVlExport& export_file, api::QuestionType type, std::size_t count);

// The label scores for the answer maths from the rows' logits: (logit + bias) / T, in the API's label
// order (noul: true, false).
std::vector<double> jev_vl_label_scores(const JevVlReadout& readout, api::QuestionType type,
                                        const std::vector<double>& logits);

// Loads the decoder, tokenizer.json, the export and its label rows. Throws checkpoint::LoadError or
// text::TokenizerLoadError naming the file and the problem.
std::unique_ptr<runtime::Engine> make_jev_vl_engine(const std::filesystem::path& model_dir,
                                                    const JevVlExport& export_file, const JevVlSettings& settings);

}  // namespace s1::decide
