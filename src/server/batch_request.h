#pragma once
// The body of POST /v1/systemone/batch, our extension (contract §11.5): {"requests": [<System One
// request>, …]} with 1 to 256 items, each validated on its own.

#include "api/errors.h"
#include "api/json.h"
#include "api/request.h"

#include <string_view>
#include <vector>

namespace s1::server {

inline constexpr size_t max_batch_items = 256;

struct BatchItem {
  api::Json body;  // as the client sent it, for a worker when an upstream pool serves its model
  api::Result<api::DecisionRequest> request;
};

// 422 for the whole body when it is not such an object (strict JSON, an object whose only member is
// `requests`, an array of 1 to 256 items); otherwise every item with its own validation's verdict.
api::Result<std::vector<BatchItem>> parse_batch_request(std::string_view body, const api::RequestLimits& limits);

}  // namespace s1::server
