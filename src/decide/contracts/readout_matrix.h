#pragma once
// The code-readout contracts: a headless Qwen3.5 backbone (a bare Qwen3_5Model) beside a separate
// readout matrix, one row per answer code (models.md §3.1 "separate readout matrix", §4.7, §4.8).
//
//   d3            Decision 3.0 (vllm-sr/d3 and its siblings): decision_config.json of format
//                 d3-code-readout-v1, prompt "d3" (the package's d3_format.py);
//   pplx-decider  perplexity-ai/pplx-decider-v1.1-27b: decision_config.json format_version 1, the
//                 prompt of its autojev model.py (decision_messages).
//
//   prompt   per question, one system turn and one user turn through the checkpoint's own chat
//            template with the generation prompt and thinking off (…<|im_start|>assistant\n<think>\n\n
//            </think>\n\n):
//              State:\n<state>\n\nQuestion:\n<instructions>\n\nOptions:\n<code>: <text> lines\n\n<closing>
//            values as Python's str / json.dumps(ensure_ascii=False); falsy instructions become
//            "Choose the best matching option."; the system message and closing line are the
//            family's. Options: choice "name" or "name: description"; noul false then true
//            ("No / false", "Yes / true" unless described); score the levels, lowest first.
//   readout  final-norm hidden at the last prompt token × the readout rows of the question's codes
//            (rows 0 … n−1, never the other codes), fp32 rows with double accumulation (or BF16-rounded
//            hidden, rows and logits for readout_dtype bfloat16); ÷ T (decision_config.json) once;
//            softmax; linear confidence (API §5.1).
//   run      attention_mode noncausal_full_attention makes the full-attention layers bidirectional,
//            so a prompt's early states depend on its end: every question runs whole as its own row
//            (rows of one request batched as branches of the empty prefix), never from a shared
//            prefix and never truncated (over max_length: 400 max_tokens_exceeded). input_tokens counts
//            every row in full.
//   limits   choice 1–255, noul, score 2–10.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "api/request.h"
#include "backend/cpu/precision.h"
#include "model/checkpoint/config_reader.h"
#include "runtime/engine.h"
#include "text/chat_template.h"

namespace s1::decide {

inline constexpr std::string_view d3_contract = "d3";
inline constexpr std::string_view pplx_decider_contract = "pplx-decider";
// Rows of every readout matrix: one per answer code.
inline constexpr std::size_t readout_code_count = 255;

// Whose prompt texts and decision_config.json rules a checkpoint follows.
enum class CodeReadoutFamily { d3, pplx };

enum class AttentionMode { causal, noncausal_full_attention };
enum class ReadoutDtype { float32, bfloat16 };

// decision_config.json, read strictly.
struct CodeReadoutConfig {
  std::vector<std::string> codes;  // 255 distinct answer codes, in readout-row order
  std::vector<int32_t> token_ids;  // the single token of each code
  double temperature = 1.0;
  AttentionMode attention_mode = AttentionMode::causal;
  ReadoutDtype readout_dtype = ReadoutDtype::float32;
  // Longest prompt in tokens; nullopt: the checkpoint's max_position_embeddings.
  std::optional<std::size_t> max_length;
};

// d3: format_version 1 and format_id "d3-code-readout-v1" required; prompt (only "d3"), base_model,
// revision, temperature (default 1), attention_mode ("causal" default, "noncausal_full_attention"),
// pooling (only "last"), max_length (null or ≥ 16), readout_dtype ("float32" default, "bfloat16").
// pplx: format_version 1, codes, token_ids and temperature required; prompt (only "pplx") and the
// same optional keys; max_length defaults to 8192 (upstream prepare()'s limit).
// Any other key, a wrong type or value, or codes / token ids that are not 255 distinct entries is a
// checkpoint::LoadError naming the file and the key.
CodeReadoutConfig read_code_readout_config(const std::filesystem::path& file, CodeReadoutFamily family);

struct CodeReadoutSettings {
  CodeReadoutFamily family = CodeReadoutFamily::d3;
  std::string name;
  std::vector<std::string> aliases;
  std::string description;
  backend::cpu::Precision precision = backend::cpu::Precision::fp32;
  // Overrides decision_config.json's readout_dtype (e.g. bfloat16 to reproduce pplx's BF16 Linear).
  std::optional<ReadoutDtype> readout_dtype;
};

// Reads this contract's members of an s1serve.json whose "contract" member was already read (name,
// aliases, description, precision "fp32"|"bf16", readout_dtype "float32"|"bfloat16"); unknown members
// are load errors naming the file and key. Defaults: named after the family, bf16 where the CPU
// multiplies bf16 natively (AMX), else fp32.
CodeReadoutSettings read_code_readout_settings(checkpoint::ConfigReader& decision_file, CodeReadoutFamily family);

// The family's system message, byte for byte as upstream's.
std::string_view code_readout_system_message(CodeReadoutFamily family);

// The option texts of a question in code order (choice in criteria order, noul false then true,
// score lowest level first).
std::vector<std::string> code_readout_option_texts(const api::Question& question);

// The system and user messages of one question, codes taken in order from `codes`. Throws
// std::invalid_argument when the question has more options than codes.
std::vector<text::ChatMessage> code_readout_messages(CodeReadoutFamily family, const api::Json& state,
                                                     const api::Question& question,
                                                     std::span<const std::string> codes);

// Readout logits of the first `count` codes for one final-norm hidden row: rows · hidden accumulated in
// double, or for bfloat16 hidden and rows rounded to BF16 first and each logit rounded to BF16 after
// (a BF16 Linear).
std::vector<double> code_readout_logits(std::span<const float> readout_rows, std::size_t hidden,
                                        std::span<const float> hidden_row, std::size_t count, ReadoutDtype dtype);

// One answer from the readout logits of a question's codes, in code order (noul: false, true):
// softmax(logits / T), linear confidence.
api::Result<api::Answer> code_readout_answer(api::QuestionType type, std::span<const double> code_logits,
                                             double temperature);

// Loads decision_config.json, the backbone (causal or noncausal as attention_mode says, no LM head),
// readout.safetensors (tensor "weight" [255, hidden]), tokenizer.json and the chat template of
// `model_dir`. Throws checkpoint::LoadError or text::TokenizerLoadError naming the file and the
// problem (e.g. a code that is not its token id's single token).
std::unique_ptr<runtime::Engine> make_code_readout_engine(const std::filesystem::path& model_dir,
                                                          const CodeReadoutSettings& settings);

}  // namespace s1::decide
