#include "server/batch_request.h"

#include <string>

namespace s1::server {

api::Result<std::vector<BatchItem>> parse_batch_request(std::string_view body, const api::RequestLimits& limits) {
  auto parsed = api::parse_strict_json(body);
  if (const auto* error = std::get_if<api::JsonSyntaxError>(&parsed)) {
    return api::ApiError::validation({api::validation::json_invalid(error->message)});
  }
  api::Json& document = std::get<api::Json>(parsed);
  if (!document.is_object()) return api::ApiError::validation({{"dict_type", {}, "Input should be a valid dictionary"}});
  std::vector<api::ValidationIssue> issues;
  for (const auto& [name, value] : document.items()) {
    if (name != "requests") issues.push_back({"extra_forbidden", {name}, "Extra inputs are not permitted"});
  }
  const auto requests = document.find("requests");
  if (requests == document.end()) {
    issues.push_back({"missing", {"requests"}, "Field required"});
  } else if (!requests->is_array()) {
    issues.push_back({"list_type", {"requests"}, "Input should be a valid list"});
  } else if (requests->empty()) {
    issues.push_back({"too_short", {"requests"}, "List should have at least 1 item after validation, not 0"});
  } else if (requests->size() > max_batch_items) {
    issues.push_back({"too_long", {"requests"},
                      "List should have at most " + std::to_string(max_batch_items) + " items after validation, not " +
                          std::to_string(requests->size())});
  }
  if (!issues.empty()) return api::ApiError::validation(std::move(issues));

  std::vector<BatchItem> items;
  items.reserve(requests->size());
  for (api::Json& item : *requests) {
    auto request = api::validate_system_one_request(item, limits);
    items.push_back(BatchItem{std::move(item), std::move(request)});
  }
  return items;
}

}  // namespace s1::server
