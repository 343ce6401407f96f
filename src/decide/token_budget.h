#pragma once
// The contract's token rules (§3.3, §4.3): no sequence beyond the model's context and no request
// beyond the budget; never truncated.

#include "api/errors.h"

#include <cstdint>
#include <optional>

namespace s1::decide {

// A sequence of `tokens` positions that must fit the model's context.
std::optional<api::ApiError> check_sequence_fits(int64_t tokens, int64_t context_tokens);
std::optional<api::ApiError> check_request_budget(int64_t input_tokens, int64_t token_budget);

}  // namespace s1::decide
