#pragma once
// The s1serve.json members and logit handling that every decoder contract shares, read and applied
// the same way so that a model card's "name", "precision" or "logit_rounding" means one thing.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "api/errors.h"
#include "api/request.h"
#include "backend/cpu/precision.h"
#include "model/checkpoint/config_reader.h"
#include "runtime/engine.h"
#include "text/tokenizer.h"

namespace s1::decide {

// "fp32" or "bf16"; nullopt for anything else.
std::optional<backend::cpu::Precision> parse_precision(std::string_view name);

// bf16 where the CPU runs bf16 linears (backend::cpu::linear_supported: AVX-512, AMX when present), else fp32.
backend::cpu::Precision default_linear_precision();

// The optional "precision" member ("fp32" | "bf16"); `fallback` when absent. A value this CPU cannot
// run is a load error naming the key.
backend::cpu::Precision read_precision(checkpoint::ConfigReader& decision_file, backend::cpu::Precision fallback);

// The optional "context_tokens" member (not negative); 0, the checkpoint's context length, when absent.
std::size_t read_context_tokens(checkpoint::ConfigReader& decision_file);

// How label logits reach the softmax: rounded to BF16 as a reference's BF16 LM head leaves them, or
// kept as computed (to compare against an fp32 reference worker).
enum class LogitRounding { bf16, none };

// The optional "logit_rounding" member ("bf16" | "none"); `fallback` when absent.
LogitRounding read_logit_rounding(checkpoint::ConfigReader& decision_file, LogitRounding fallback);

// The logit as a BF16 LM head returns it: rounded to fp32, then to BF16 (nearest, ties to even);
// inf and NaN unchanged.
double round_logit_to_bf16(double logit);

// Applies `rounding` to every logit in place.
void round_logits(std::span<double> logits, LogitRounding rounding);

// The served-model members every contract's settings carry: "name" (not empty), "aliases" and
// "description", each defaulting to what `settings` already holds.
template <typename Settings>
void read_served_model_identity(checkpoint::ConfigReader& decision_file, Settings& settings) {
  settings.name = decision_file.optional<std::string>("name", settings.name);
  if (settings.name.empty()) decision_file.reject("name", "must not be empty");
  settings.aliases = decision_file.optional<std::vector<std::string>>("aliases", settings.aliases);
  settings.description = decision_file.optional<std::string>("description", settings.description);
}

// The settings of a contract whose decision file holds only the served-model identity, "precision"
// (default: default_linear_precision) and "logit_rounding"; any other member is a load error.
template <typename Settings>
Settings read_identity_precision_and_rounding(checkpoint::ConfigReader& decision_file) {
  Settings settings;
  settings.precision = default_linear_precision();
  read_served_model_identity(decision_file, settings);
  settings.precision = read_precision(decision_file, settings.precision);
  settings.logit_rounding = read_logit_rounding(decision_file, settings.logit_rounding);
  decision_file.finish();
  return settings;
}

// What /v1/models says of a served contract: its description, the question types it answers (all
// three unless given), its option limit, context length and confidence method.
runtime::ModelInfo served_model_info(std::string description, std::size_t max_choice_options,
                                     std::size_t context_tokens, std::string_view confidence_method,
                                     std::vector<api::QuestionType> question_types = {
                                         api::QuestionType::choice, api::QuestionType::noul, api::QuestionType::score});

// The ids of `text` with no special tokens added: a rendered chat template spells its own, and a
// label or value is read as the bare tokens it is.
std::vector<int32_t> encode_without_special_tokens(const text::Tokenizer& tokenizer, std::string_view text);

// A rendered prompt encoded as encode_without_special_tokens does, or the refusal
// check_sequence_fits gives when it does not fit the model's `context_tokens` (never truncated).
api::Result<std::vector<int32_t>> encode_prompt_within(const text::Tokenizer& tokenizer, std::string_view prompt,
                                                       std::size_t context_tokens);

// The vocabulary id of a label whose logit a contract reads, as its reference looks the label up in
// the vocabulary. The readout only makes sense when the label alone also encodes to exactly that
// token, within the model's `vocab_size` rows; otherwise a checkpoint::LoadError names `model_dir`,
// the label and `contract`.
int32_t require_label_token(const text::Tokenizer& tokenizer, const std::string& label, std::size_t vocab_size,
                            const std::filesystem::path& model_dir, std::string_view contract);

}  // namespace s1::decide
