#pragma once
// The Decider-2B v11 contract (models.md §4.4; pinned reference: Mapika/decider 50d0be0d, decider-ai
// 1.8.1, decider/systemone.py and decider/prompt_fast.py, as ThinkFlowLab/system1-omni
// src/models/decider/native serves it). The checkpoint is a Qwen3.5-2B-Base fine-tune with tied
// embeddings, run as plain text: no chat template.
//
//   prompt   every row = "Context:\n" + state (tokenised alone, then cut to its first 32,768
//            tokens), followed by one question piece tokenised on its own:
//              \n\nQuestion: <text>\nOptions:\n(A) <option>…\nAnswer: (
//            Up to 10 options the piece is one string (letters A–J); past 10 each option is
//            "\n(" + the label's token id + ") <option>", the labels being the 255 single-token
//            labels A…Z, AA…JT of the reference. State and texts: a string as-is, else Python's
//            json.dumps(ensure_ascii=False) with default separators; in the state, every array of 8
//            or more elements gets its positions written ({"_index": i, …} or {"_index": i, "value": x}).
//   rows     choice: one row, options "<name>" or "<name>: <description>";
//            noul: one row, options "no[: <false description>]", "yes[: <true description>]", the
//            question "Which answer fits the context?" when it has no instructions;
//            score: one yes/no row per level, "<instructions>\nProposed answer: <level without a
//            leading "<number>:">\nDoes the proposed answer fit?".
//   readout  the final-norm hidden state at the last token (the "(") times the tied embedding rows
//            of the labels in use, each logit rounded to BF16 (the reference's BF16 GEMM), then
//            softmax(z / T) with T per question type (choice 1.164, noul 1.624, score 1.124).
//            noul = P(yes); choice = argmax with TypeSafe confidence; score: each level's P(yes) is
//            its fit, the level distribution is the fits divided by their sum, score = Σ i·pᵢ with
//            TypeSafe score confidence.
//   limits   choice 2–255 options, score 2–10 levels; ≤ 1,024 rows, each ≤ 36,864 tokens (and the
//            model's context), ≤ 1,048,576 tokens over all rows; the state prefix alone is cut at
//            32,768 tokens as the reference cuts it (the only truncation).
//
// Every row starts with the same state tokens: that prefix runs once and every row branches from it.
// usage.input_tokens is the reference's count: the rows' longest common prefix once plus every row's
// remaining tokens.

#include <array>
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
#include "decide/contract_common.h"
#include "model/checkpoint/config_reader.h"
#include "runtime/engine.h"
#include "text/tokenizer.h"

namespace s1::decide {

inline constexpr std::string_view decider_contract = "decider-2b";
inline constexpr std::size_t decider_label_count = 255;
inline constexpr std::size_t decider_narrow_options = 10;
inline constexpr std::size_t decider_min_choice_options = 2;
inline constexpr std::size_t decider_max_state_tokens = 32768;
inline constexpr std::size_t decider_max_row_tokens = 36864;
inline constexpr std::size_t decider_max_rows = 1024;
inline constexpr std::size_t decider_max_processed_tokens = 1048576;

struct DeciderTemperatures {
  double choice = 1.164;
  double noul = 1.624;
  double score = 1.124;
};

struct DeciderSettings {
  std::string name = "decider-2b-v11";
  std::vector<std::string> aliases;
  std::string description = "Decider-2B v11: typed decisions (choice, noul, score) over a text or JSON state";
  backend::cpu::Precision precision = backend::cpu::Precision::fp32;
  LogitRounding logit_rounding = LogitRounding::bf16;
  DeciderTemperatures temperatures;
  // Token ids of the 255 labels; the Decider-2B tokenizer's by default (decider_label_token_ids).
  std::vector<int32_t> label_token_ids;
};

// The token ids of the labels A…Z, AA…JT in the Decider-2B v11 tokenizer, copied from the
// reference's pinned fixture (ThinkFlowLab/system1-omni tests/decider/data/cpu.json, "label_ids").
std::span<const int32_t> decider_label_token_ids();

// Reads this contract's members of an s1serve.json whose "contract" member was already read: name,
// aliases, description, precision "fp32"|"bf16", logit_rounding "bf16"|"none", temperatures
// {"choice","noul","score"} (each > 0), label_token_ids (255 distinct ids, for a checkpoint whose
// tokenizer is not Decider-2B's). Unknown members are load errors naming the file and key.
DeciderSettings read_decider_settings(checkpoint::ConfigReader& decision_file);

// The state after "Context:\n": a string as-is, else json.dumps(ensure_ascii=False) of the state with
// its long arrays annotated.
std::string decider_state_text(const api::Json& state);

// Arrays of 8 or more elements, at any depth, with each element's position written into it.
api::Json decider_annotate_long_arrays(const api::Json& value);

// A level's text without a leading "<integer>:" (Python re ^\s*-?\d+\s*:\s* with Unicode classes).
std::string decider_strip_level_number(std::string_view level);

// One scoring row before tokenisation: the question text and its option lines.
struct DeciderRow {
  std::string question;
  std::vector<std::string> options;
};

// The rows of one question (one for choice and noul, one per level for score), or 400
// unsupported_question_type when the reference cannot render it (fewer than two options, no
// instructions).
api::Result<std::vector<DeciderRow>> decider_rows(const api::Question& question);

// The tokens every row starts with: "Context:\n" + decider_state_text(state), cut to its first 32,768
// tokens as the reference cuts it.
std::vector<int32_t> decider_context_tokens(const text::Tokenizer& tokenizer, const api::Json& state);

// The question piece of one row ("\n\nQuestion: …\nAnswer: ("), with the label ids spliced in past
// 10 options. label_ids holds at least row.options.size() ids.
std::vector<int32_t> decider_question_tokens(const text::Tokenizer& tokenizer, const DeciderRow& row,
                                             std::span<const int32_t> label_ids);

// The reference's usage count: the longest common prefix of all rows once plus every row's remaining
// tokens (a single row counts whole).
int64_t decider_unique_tokens(const std::vector<std::vector<int32_t>>& rows);

// One answer from the label logits of its rows (one row for choice/noul, one per level for score;
// noul and score rows hold the logits of (no, yes)).
api::Result<api::Answer> decider_answer(api::QuestionType type, std::span<const std::vector<double>> row_logits,
                                        const DeciderTemperatures& temperatures, LogitRounding rounding);

// Loads the decoder and tokenizer.json of `model_dir`. Throws checkpoint::LoadError or
// text::TokenizerLoadError naming the file and the problem (e.g. label ids outside the vocabulary).
std::unique_ptr<runtime::Engine> make_decider_engine(const std::filesystem::path& model_dir,
                                                     const DeciderSettings& settings);

}  // namespace s1::decide
