#include "decide/token_budget.h"

#include <string>

namespace s1::decide {

std::optional<api::ApiError> check_sequence_fits(int64_t tokens, int64_t context_tokens) {
  if (tokens <= context_tokens) return std::nullopt;
  return api::ApiError::make(api::ErrorCode::max_tokens_exceeded,
                             "A prompt needs " + std::to_string(tokens) + " tokens; the model's context is " +
                                 std::to_string(context_tokens) + " tokens");
}

std::optional<api::ApiError> check_request_budget(int64_t input_tokens, int64_t token_budget) {
  if (input_tokens <= token_budget) return std::nullopt;
  return api::ApiError::make(api::ErrorCode::max_tokens_exceeded,
                             "The request needs " + std::to_string(input_tokens) +
                                 " input tokens; the limit per request is " + std::to_string(token_budget));
}

}  // namespace s1::decide
