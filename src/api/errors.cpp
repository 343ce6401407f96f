#include "api/errors.h"

#include "api/json.h"

namespace s1::api {

ApiError ApiError::make(ErrorCode code, std::string message) {
  ApiError error;
  error.code = code;
  error.message = std::move(message);
  if (code == ErrorCode::unauthorized) error.headers.emplace_back("WWW-Authenticate", "Bearer");
  if (code == ErrorCode::overloaded) error.headers.emplace_back("Retry-After", "1");
  return error;
}

ApiError ApiError::validation(std::vector<ValidationIssue> issues) {
  ApiError error;
  error.code = ErrorCode::validation;
  error.message = issues.empty() ? "Invalid request" : issues.front().message;
  error.issues = std::move(issues);
  return error;
}

ApiError ApiError::method_not_allowed(std::string_view allow) {
  ApiError error = make(ErrorCode::method_not_allowed, "Method not allowed");
  error.headers.emplace_back("Allow", std::string(allow));
  return error;
}

ApiError ApiError::model_unavailable(std::string_view model, bool failed) {
  ApiError error = make(ErrorCode::model_unavailable,
                        failed ? "Model " + std::string(model) + " failed and cannot serve requests"
                               : "Model " + std::string(model) + " is not ready yet");
  if (!failed) error.headers.emplace_back("Retry-After", "5");
  return error;
}

int http_status(ErrorCode code) {
  switch (code) {
    case ErrorCode::validation: return 422;
    case ErrorCode::unknown_model:
    case ErrorCode::unsupported_media:
    case ErrorCode::invalid_media:
    case ErrorCode::unsupported_question_type:
    case ErrorCode::too_many_options:
    case ErrorCode::max_tokens_exceeded:
    case ErrorCode::bad_request:
    case ErrorCode::invalid_body_encoding:
    case ErrorCode::invalid_multipart:
    case ErrorCode::unsupported_input: return 400;
    case ErrorCode::unauthorized: return 401;
    case ErrorCode::not_found: return 404;
    case ErrorCode::method_not_allowed: return 405;
    case ErrorCode::request_timeout: return 408;
    case ErrorCode::payload_too_large: return 413;
    case ErrorCode::uri_too_long: return 414;
    case ErrorCode::unsupported_media_type: return 415;
    case ErrorCode::header_fields_too_large: return 431;
    case ErrorCode::internal_error: return 500;
    case ErrorCode::not_implemented: return 501;
    case ErrorCode::upstream_unavailable:
    case ErrorCode::upstream_bad_response: return 502;
    case ErrorCode::overloaded:
    case ErrorCode::model_unavailable: return 503;
    case ErrorCode::deadline_exceeded: return 504;
    case ErrorCode::http_version_not_supported: return 505;
  }
  return 500;
}

std::string_view error_type(ErrorCode code) {
  switch (code) {
    case ErrorCode::validation: return "validation_error";
    case ErrorCode::unknown_model: return "unknown_model";
    case ErrorCode::unsupported_media: return "unsupported_media";
    case ErrorCode::invalid_media: return "invalid_media";
    case ErrorCode::unsupported_question_type: return "unsupported_question_type";
    case ErrorCode::too_many_options: return "too_many_options";
    case ErrorCode::max_tokens_exceeded: return "max_tokens_exceeded";
    case ErrorCode::bad_request: return "bad_request";
    case ErrorCode::invalid_body_encoding: return "invalid_body_encoding";
    case ErrorCode::invalid_multipart: return "invalid_multipart";
    case ErrorCode::unsupported_input: return "unsupported_input";
    case ErrorCode::unauthorized: return "unauthorized";
    case ErrorCode::not_found: return "not_found";
    case ErrorCode::method_not_allowed: return "method_not_allowed";
    case ErrorCode::request_timeout: return "request_timeout";
    case ErrorCode::payload_too_large: return "payload_too_large";
    case ErrorCode::uri_too_long: return "uri_too_long";
    case ErrorCode::unsupported_media_type: return "unsupported_media_type";
    case ErrorCode::header_fields_too_large: return "header_fields_too_large";
    case ErrorCode::internal_error: return "internal_error";
    case ErrorCode::not_implemented: return "not_implemented";
    case ErrorCode::upstream_unavailable: return "upstream_unavailable";
    case ErrorCode::upstream_bad_response: return "upstream_bad_response";
    case ErrorCode::overloaded: return "overloaded";
    case ErrorCode::model_unavailable: return "model_unavailable";
    case ErrorCode::deadline_exceeded: return "deadline_exceeded";
    case ErrorCode::http_version_not_supported: return "http_version_not_supported";
  }
  return "internal_error";
}

std::string system_one_error_body(const ApiError& error) {
  std::string out;
  if (error.code == ErrorCode::validation) {
    out += "{\"detail\":[";
    bool first = true;
    for (const ValidationIssue& issue : error.issues) {
      if (!first) out += ',';
      first = false;
      out += "{\"type\":";
      append_json_string(out, issue.type);
      out += ",\"loc\":[\"body\"";
      for (const LocationPart& part : issue.location) {
        out += ',';
        if (const auto* name = std::get_if<std::string>(&part)) {
          append_json_string(out, *name);
        } else {
          out += std::to_string(std::get<int64_t>(part));
        }
      }
      out += "],\"msg\":";
      append_json_string(out, issue.message);
      out += '}';
    }
    out += "]}";
    return out;
  }
  out += "{\"detail\":{\"error_type\":";
  append_json_string(out, error_type(error.code));
  out += ",\"message\":";
  append_json_string(out, error.message);
  out += "}}";
  return out;
}

std::string openai_param(const Location& location) {
  std::string param;
  for (const LocationPart& part : location) {
    if (const auto* name = std::get_if<std::string>(&part)) {
      if (!param.empty()) param += '.';
      param += *name;
    } else {
      param += '[' + std::to_string(std::get<int64_t>(part)) + ']';
    }
  }
  return param;
}

std::string openai_error_body(const ApiError& error) {
  const int status = http_status(error.code);
  const std::string_view type = status == 401 || status == 403 ? "authentication_error"
                                : status >= 500               ? "server_error"
                                                              : "invalid_request_error";
  std::string param = error.openai_param;
  std::string_view code = error_type(error.code);
  std::string_view message = error.message;
  if (error.code == ErrorCode::validation && !error.issues.empty()) {
    const ValidationIssue& first = error.issues.front();
    code = first.type;
    message = first.message;
    if (param.empty()) param = openai_param(first.location);
  }
  std::string out = "{\"error\":{\"message\":";
  append_json_string(out, message);
  out += ",\"type\":";
  append_json_string(out, type);
  out += ",\"param\":";
  if (param.empty()) {
    out += "null";
  } else {
    append_json_string(out, param);
  }
  out += ",\"code\":";
  append_json_string(out, code);
  out += "}}";
  return out;
}

}  // namespace s1::api
