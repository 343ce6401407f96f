#pragma once
// The Open-Jev verifier contract (models.md §4.9 Open-Jev-27B-v1.1, §4.10 Open-Jev-9B; pinned upstream:
// Zefan-Cai/Open-Jev 3308a15, served as ThinkFlowLab/system1-omni src/models/open_jev/native does). The
// checkpoint is a Qwen3.5/3.8 hybrid decoder with the LoRA merged, beside open_jev_export.json
// ("open-jev-text-merged/1": the trained scalar head, its bias, the calibration temperature, max_length,
// the pins and the single-user chat prefix/suffix).
//
//   prompt   one sequence per candidate:
//              Context:\n<state>\n\nQuestion: <instructions>\n
//            then for a choice option or score level
//              Proposed answer: <option>\nIs this proposed answer correct? Answer Yes or No.
//            and for noul (one sequence; criteria add "\nYes means: …" / "\nNo means: …" to the
//            instructions)
//              Is the answer to this question yes? Answer Yes or No.
//            wrapped in the export's chat prefix and suffix and tokenised whole. Options are `name`, or
//            `name: <description>`; strings as-is, objects and arrays as Python's
//            json.dumps(sort_keys=True, ensure_ascii=False) with its default separators.
//   readout  the final-norm hidden row at each sequence's last token → s = w·h accumulated in FP64,
//            rounded to FP32, + bias in FP32; noul logits [false 0, true s]; softmax((l − max)/T) over
//            all of a question's candidates; choice argmax (first wins) with linear (TypeSafe)
//            confidence; score = expected index with the TypeSafe score confidence; noul = p(true).
//   limits   choice 1–255, score 2–10, noul; ≤ 4,096 questions and ≤ 65,536 candidate sequences per
//            request; every sequence within max_length tokens (400 before any compute, never truncated).
//
// The reference runs every candidate sequence on its own, re-reading the state each time. Here every
// sequence is tokenised whole, the longest common token prefix of all of them (chat prefix, context and
// state) runs once and every candidate of every question branches from it in one batch; usage counts
// that prefix once.

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

inline constexpr std::string_view open_jev_contract = "open-jev";
inline constexpr std::string_view open_jev_export_file = "open_jev_export.json";
inline constexpr std::string_view open_jev_export_format = "open-jev-text-merged/1";
inline constexpr std::size_t open_jev_max_questions = 4096;
inline constexpr std::size_t open_jev_max_candidates = 65536;
inline constexpr std::size_t open_jev_max_length_limit = 16384;

// open_jev_export.json, as the reference's export_merged.py writes it.
struct OpenJevExport {
  std::string model_id;  // the base model ("Qwen/Qwen3.8-27B", "Qwen/Qwen3.5-9B")
  std::string base_revision;
  std::string checkpoint_revision;
  double temperature = 1.0;
  std::size_t max_length = 4096;
  std::string chat_prefix;
  std::string chat_suffix;
  std::vector<float> head_weight;  // [hidden]
  float head_bias = 0.0F;
};

// Reads and checks the export file strictly: format, T finite and > 0, max_length in 1–16,384, a
// finite head; unknown members are load errors naming the file and key.
OpenJevExport read_open_jev_export(const std::filesystem::path& path);

// A checkpoint the reference pins (models.md §4.9, §4.10): its export must carry these revisions.
struct OpenJevCheckpoint {
  std::string_view name;  // the canonical id served
  std::string_view model_id;
  std::string_view base_revision;
  std::string_view checkpoint_revision;
  std::string_view alias;
};

// The pinned checkpoint an export's model_id names, or nullopt for another base model (a stand-in).
std::optional<OpenJevCheckpoint> open_jev_checkpoint(std::string_view model_id);

struct OpenJevSettings {
  std::string name;
  std::vector<std::string> aliases;
  std::string description;
  backend::cpu::Precision precision = backend::cpu::Precision::fp32;
};

// This contract's members of an s1serve.json whose "contract" member was already read (name, aliases,
// description, precision "fp32"|"bf16"). A pinned export defaults the name to the checkpoint's and
// the aliases to [checkpoint alias, base model id, "open-jev", "jev-latest"]; an export of another
// base model must be named in s1serve.json, and one of a pinned base model with other revisions is a
// load error.
OpenJevSettings read_open_jev_settings(checkpoint::ConfigReader& decision_file, const OpenJevExport& export_file);

// A value as the reference writes it into a prompt: a string as-is, anything else as
// json.dumps(value, sort_keys=True, ensure_ascii=False).
std::string open_jev_text(const api::Json& value);

// The candidate bodies of one question before the chat wrap: one per option or level, one for noul.
std::vector<std::string> open_jev_prompts(const api::Json& state, const api::Question& question);

// The scalar head: Σ w·h accumulated in double, rounded to float, plus the bias in float.
float open_jev_head_score(std::span<const float> weight, float bias, std::span<const float> hidden);

// A question's label scores for the answer maths from its candidates' head scores: the scores
// themselves for choice and score; noul's single score s as the pair (true s, false 0).
std::vector<double> open_jev_label_scores(api::QuestionType type, std::span<const float> candidate_scores);

// Loads the decoder, tokenizer.json and the export of `model_dir`. Throws checkpoint::LoadError or
// text::TokenizerLoadError naming the file and the problem (e.g. a head whose width is not the
// model's hidden size).
std::unique_ptr<runtime::Engine> make_open_jev_engine(const std::filesystem::path& model_dir,
                                                      const OpenJevExport& export_file,
                                                      const OpenJevSettings& settings);

}  // namespace s1::decide
