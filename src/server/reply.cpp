#include "server/reply.h"

namespace s1::server {

Reply error_reply(const api::ApiError& error, Route route) {
  Reply reply;
  reply.status = api::http_status(error.code);
  for (const auto& [name, value] : error.headers) reply.headers.add(name, value);
  // OpenAI's own routes speak its envelope (contract §6.4, §11.1).
  const bool openai_route = route == Route::decisions || route == Route::model;
  reply.body = openai_route ? api::openai_error_body(error) : api::system_one_error_body(error);
  switch (error.code) {
    case api::ErrorCode::overloaded: reply.rejected = "overloaded"; break;
    case api::ErrorCode::deadline_exceeded: reply.rejected = "deadline"; break;
    case api::ErrorCode::payload_too_large: reply.rejected = "too_large"; break;
    case api::ErrorCode::unauthorized: reply.rejected = "unauthorized"; break;
    case api::ErrorCode::validation:
    case api::ErrorCode::unknown_model:
    case api::ErrorCode::unsupported_media:
    case api::ErrorCode::invalid_media:
    case api::ErrorCode::unsupported_question_type:
    case api::ErrorCode::too_many_options:
    case api::ErrorCode::max_tokens_exceeded:
    case api::ErrorCode::unsupported_input:
    case api::ErrorCode::unsupported_media_type:
    case api::ErrorCode::bad_request:
    case api::ErrorCode::invalid_body_encoding:
    case api::ErrorCode::invalid_multipart:
    case api::ErrorCode::uri_too_long:
    case api::ErrorCode::header_fields_too_large:
    case api::ErrorCode::not_implemented:
    case api::ErrorCode::http_version_not_supported: reply.rejected = "invalid"; break;
    default: break;
  }
  return reply;
}

}  // namespace s1::server
