#include "decide/contract_common.h"

#include <bit>
#include <cstdint>
#include <utility>

#include "backend/cpu/linear.h"
#include "decide/token_budget.h"
#include "model/checkpoint/load_error.h"

namespace s1::decide {

std::optional<backend::cpu::Precision> parse_precision(std::string_view name) {
  if (name == "fp32") return backend::cpu::Precision::fp32;
  if (name == "bf16") return backend::cpu::Precision::bf16;
  return std::nullopt;
}

backend::cpu::Precision default_linear_precision() {
  return backend::cpu::preferred_linear_precision();
}

backend::cpu::Precision read_precision(checkpoint::ConfigReader& decision_file, backend::cpu::Precision fallback) {
  const auto precision = decision_file.optional<std::string>("precision");
  if (!precision) return fallback;
  const auto parsed = parse_precision(*precision);
  if (!parsed) decision_file.reject("precision", "must be \"fp32\" or \"bf16\"");
  if (!backend::cpu::linear_supported(*parsed)) decision_file.reject("precision", "bf16 needs a CPU with AVX-512");
  return *parsed;
}

std::size_t read_context_tokens(checkpoint::ConfigReader& decision_file) {
  const int64_t context = decision_file.optional<int64_t>("context_tokens", 0);
  if (context < 0) decision_file.reject("context_tokens", "must not be negative");
  return static_cast<std::size_t>(context);
}

LogitRounding read_logit_rounding(checkpoint::ConfigReader& decision_file, LogitRounding fallback) {
  const auto rounding = decision_file.optional<std::string>("logit_rounding");
  if (!rounding) return fallback;
  if (*rounding == "bf16") return LogitRounding::bf16;
  if (*rounding == "none") return LogitRounding::none;
  decision_file.reject("logit_rounding", "must be \"bf16\" or \"none\"");
}

double round_logit_to_bf16(double logit) {
  const auto bits = std::bit_cast<uint32_t>(static_cast<float>(logit));
  if ((bits & 0x7F800000U) == 0x7F800000U) return static_cast<float>(logit);
  // Round to nearest, ties to even, on the upper 16 bits of the fp32 pattern.
  const uint32_t rounded = (bits + 0x7FFFU + ((bits >> 16) & 1U)) & 0xFFFF0000U;
  return static_cast<double>(std::bit_cast<float>(rounded));
}

void round_logits(std::span<double> logits, LogitRounding rounding) {
  if (rounding != LogitRounding::bf16) return;
  for (double& logit : logits) logit = round_logit_to_bf16(logit);
}

std::vector<int32_t> encode_without_special_tokens(const text::Tokenizer& tokenizer, std::string_view text) {
  text::EncodeOptions options;
  options.add_special_tokens = false;
  return tokenizer.encode(text, options).ids;
}

api::Result<std::vector<int32_t>> encode_prompt_within(const text::Tokenizer& tokenizer, std::string_view prompt,
                                                       std::size_t context_tokens) {
  std::vector<int32_t> ids = encode_without_special_tokens(tokenizer, prompt);
  if (auto error = check_sequence_fits(static_cast<int64_t>(ids.size()), static_cast<int64_t>(context_tokens))) {
    return *error;
  }
  return ids;
}

int32_t require_label_token(const text::Tokenizer& tokenizer, const std::string& label, std::size_t vocab_size,
                            const std::filesystem::path& model_dir, std::string_view contract) {
  const std::optional<int32_t> id = tokenizer.token_to_id(label);
  const std::vector<int32_t> encoded = encode_without_special_tokens(tokenizer, label);
  if (!id || encoded.size() != 1 || encoded.front() != *id || static_cast<std::size_t>(*id) >= vocab_size) {
    throw checkpoint::LoadError(model_dir.string() + ": the label '" + label +
                                "' is not a single token of tokenizer.json within the model's vocabulary, so the " +
                                std::string(contract) + " contract cannot read it");
  }
  return *id;
}

runtime::ModelInfo served_model_info(std::string description, std::size_t max_choice_options,
                                     std::size_t context_tokens, std::string_view confidence_method,
                                     std::vector<api::QuestionType> question_types) {
  runtime::ModelInfo model;
  model.description = std::move(description);
  model.question_types = std::move(question_types);
  model.max_choice_options = max_choice_options;
  model.context_tokens = static_cast<int64_t>(context_tokens);
  model.confidence_method = std::string(confidence_method);
  return model;
}

}  // namespace s1::decide
