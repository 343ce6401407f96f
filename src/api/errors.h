#pragma once
// One typed error for every failure a request can meet, mapped to its HTTP status and to the two wire
// envelopes (System One and OpenAI Decisions) in exactly one place (errors.cpp).

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace s1::api {

enum class ErrorCode {
  validation,                 // 422, carries ValidationIssues
  unknown_model,              // 400
  unsupported_media,          // 400
  invalid_media,              // 400, an image that cannot be used: undecodable, over a limit, unreferenced
  unsupported_question_type,  // 400
  too_many_options,           // 400
  max_tokens_exceeded,        // 400
  bad_request,                // 400, malformed HTTP framing (§11.6)
  invalid_body_encoding,      // 400
  invalid_multipart,          // 400
  unsupported_input,          // 400, /v1/decisions input items s1serve cannot render (function calls)
  unauthorized,               // 401
  not_found,                  // 404
  method_not_allowed,         // 405
  request_timeout,            // 408
  payload_too_large,          // 413
  uri_too_long,               // 414
  unsupported_media_type,     // 415
  header_fields_too_large,    // 431
  internal_error,             // 500
  not_implemented,            // 501
  upstream_unavailable,       // 502
  upstream_bad_response,      // 502
  overloaded,                 // 503
  model_unavailable,          // 503
  deadline_exceeded,          // 504
  http_version_not_supported,  // 505
};

// One element of a validation location: a member name or an array index.
using LocationPart = std::variant<std::string, int64_t>;
using Location = std::vector<LocationPart>;

struct ValidationIssue {
  std::string type;  // json_invalid, missing, dict_type, ...
  Location location;  // without the leading "body"
  std::string message;
};

using Header = std::pair<std::string, std::string>;

struct ApiError {
  ErrorCode code = ErrorCode::internal_error;
  std::string message;
  std::vector<ValidationIssue> issues;  // non-empty exactly when code == validation
  std::vector<Header> headers;          // Allow, Retry-After, WWW-Authenticate
  std::string openai_param;             // `param` of the OpenAI envelope when no issue gives one

  static ApiError make(ErrorCode code, std::string message);
  static ApiError validation(std::vector<ValidationIssue> issues);
  static ApiError method_not_allowed(std::string_view allow);
  static ApiError model_unavailable(std::string_view model, bool failed);
};

int http_status(ErrorCode code);
std::string_view error_type(ErrorCode code);

// {"detail":[...]} for validation, {"detail":{"error_type","message"}} otherwise.
std::string system_one_error_body(const ApiError& error);

// {"error":{"message","type","param","code"}} (contract §6.4).
std::string openai_error_body(const ApiError& error);

// "questions[0].choices[1].value" from {"questions",0,"choices",1,"value"}.
std::string openai_param(const Location& location);

// Result of an operation that either yields T or fails with an ApiError.
template <typename T>
class Result {
 public:
  Result(T value) : state_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(ApiError error) : state_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<0>(state_); }
  const T& value() const { return std::get<0>(state_); }
  T& operator*() { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  ApiError& error() { return std::get<1>(state_); }
  const ApiError& error() const { return std::get<1>(state_); }

 private:
  std::variant<T, ApiError> state_;
};

}  // namespace s1::api
