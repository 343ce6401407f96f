#pragma once
// multipart/form-data request bodies (RFC 7578) as the official SDK sends them to /v1/systemone
// (§11.1): a part named `request` holding the JSON request, then one part per image asset.

#include <optional>
#include <string_view>
#include <vector>

#include "api/errors.h"
#include "api/media.h"

namespace s1::server {

struct FormPart {
  std::string_view name;          // Content-Disposition's name
  std::string_view filename;      // empty when the part has none
  std::string_view content_type;  // empty when the part has none
  std::string_view content;       // views into the body
};

// Whether a Content-Type is multipart/form-data; then its boundary parameter, which is empty when
// missing or not a valid RFC 2046 boundary (1-70 characters): the body cannot be split (400).
std::optional<std::string_view> form_data_boundary(std::string_view content_type);

// The parts of a multipart/form-data body, in order: invalid_multipart when the body is not whole
// (no closing delimiter, a part without Content-Disposition form-data and a name, a bad header line).
api::Result<std::vector<FormPart>> parse_form_data(std::string_view body, std::string_view boundary);

// A multipart /v1/systemone body taken apart: the `request` part's JSON and every other part, an
// upload for the asset that names it (§11.3).
struct FormRequest {
  std::string json;
  std::vector<api::UploadedPart> uploads;
};
// invalid_multipart when no part or two parts are named `request`; 415 when its Content-Type is
// not JSON.
api::Result<FormRequest> split_form_request(std::string_view body, std::string_view boundary);

}  // namespace s1::server
