#pragma once
// The clef contract: Cloudflare's Clef-flash (Qwen3.5-9B) and Clef (Qwen3.8-27B) decision models
// (models.md §4.14, §4.15), one record for all questions read by the joint schema head
// (model/heads/joint_schema_head.h). Learned from SGLang's entrypoints/systemone/joint_schema.py
// (after encode_record of the release's joint_schema_model.py) and llama.cpp's clef decision type.
//
//   prompt   one sequence per request, each piece tokenized on its own, no special tokens added:
//              <|im_start|>system\n<system><|im_end|>\n<|im_start|>user\nSTATE:\n | state |
//              \n\nSCHEMA FIELDS:\n | per question i, request order:
//                \nFIELD i\nID: <key>\nTYPE: <type>\nINSTRUCTION: | instructions (question span) |
//                \nALLOWED OPTIONS:\n | per option k: OPTION k:  | {"description":…,"option_id":…}
//                (option span) | \n … | END FIELD\n
//              | \n<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nJOINT SCHEMA DECISIONS:
//            values: a string as-is, anything else Python's json.dumps(ensure_ascii=False,
//            separators=(",", ":"), sort_keys=True); absent or "" instructions become the key.
//            Options: noul true then false (default descriptions unless given), choice sorted by
//            name (code point order), score "0" … "n−1" with the level as description; an option
//            without description renders {"option_id": …} alone.
//   limits   max_length tokens (16384, the reference's default): the state's tokens are cut to
//            fit; a schema that alone does not fit is 400 max_tokens_exceeded. input_tokens = the
//            prompt's length. Choice 1–255 options, score 2–10 levels. Images: refused before the
//            contract (400 unsupported_media) until the images path lands.
//   readout  one prefill, final hidden state of every position → joint schema head → one logit
//            per option; per question softmax at temperature 1; noul p(true), choice first argmax
//            with linear confidence, score expected level with the spread confidence (llama.cpp's
//            clef type: the API defaults).

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
#include "decide/contract_common.h"
#include "model/checkpoint/config_reader.h"
#include "model/heads/joint_schema_head.h"
#include "runtime/engine.h"
#include "text/tokenizer.h"

namespace s1::decide {

inline constexpr std::string_view clef_contract = "clef";
// encode_record's default max_length.
inline constexpr std::size_t clef_default_max_length = 16384;
inline constexpr std::string_view clef_head_config_file = "joint_head_config.json";
inline constexpr std::string_view clef_head_weights_file = "joint_head.safetensors";

struct ClefSettings {
  std::string name = "clef";
  std::vector<std::string> aliases;
  std::string description = "Clef: joint schema head over a Qwen3.5 / Qwen3.8 backbone";
  backend::cpu::Precision precision = backend::cpu::Precision::fp32;
  std::size_t max_length = clef_default_max_length;
};

// The members of an s1serve.json whose "contract" was already read: name, aliases, description,
// precision ("fp32" | "bf16"), max_length (an integer ≥ 64, default 16384); any other is a load
// error naming the file and the key.
ClefSettings read_clef_settings(checkpoint::ConfigReader& decision_file);

// An option as the head scores it: its id and its description (null: none).
struct ClefOption {
  std::string id;
  api::Json description;
};

// A question's options in head order (noul true, false; choice sorted by name; score by level).
std::vector<ClefOption> clef_options(const api::Question& question);

struct ClefPrompt {
  std::vector<int32_t> ids;
  std::vector<heads::JointQuestionLayout> layout;  // spans index `ids`
};

// The record of a request within `max_length` tokens (the state cut to fit), or 400
// max_tokens_exceeded when the fixed pieces and the schema alone exceed it.
api::Result<ClefPrompt> clef_prompt(const text::Tokenizer& tokenizer, const api::DecisionRequest& request,
                                    std::size_t max_length);

// The answer to `question` from its head logits (head order).
api::Result<api::Answer> clef_answer(const api::Question& question, std::span<const double> head_logits);

// Loads the backbone of `model_dir` (a Qwen3.5-family checkpoint with its LM head, vision weights
// skipped), joint_head_config.json (hidden_size must be the backbone's), joint_head.safetensors and
// tokenizer.json. Throws checkpoint::LoadError or text::TokenizerLoadError naming the file.
std::unique_ptr<runtime::Engine> make_clef_engine(const std::filesystem::path& model_dir, const ClefSettings& settings);

}  // namespace s1::decide
