#include "server/status_routes.h"

#include "api/json.h"

namespace s1::server {
namespace {

void append_string_array(std::string& out, const std::vector<std::string>& values) {
  out += '[';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    api::append_json_string(out, values[i]);
  }
  out += ']';
}

}  // namespace

StatusReply health_reply(const registry::ModelRegistry& registry) {
  bool any_failed = false;
  bool any_not_ready = false;
  std::string first_failed;
  std::string first_not_ready;
  std::string models;
  for (const auto& model : registry.models()) {
    if (!models.empty()) models += ',';
    if (model->pool) {
      const size_t healthy = model->pool->healthy_count();
      api::append_json_string(models, model->name);
      models += healthy > 0 ? ":{\"state\":\"ready\"" : ":{\"state\":\"unavailable\"";
      models += ",\"backend\":\"upstream\",\"replicas_healthy\":" + std::to_string(healthy) +
                ",\"replicas_total\":" + std::to_string(model->pool->replica_count()) + "}";
      continue;
    }
    const runtime::ModelState state = model->runner->state();
    api::append_json_string(models, model->name);
    models += ":{\"state\":\"";
    models += runtime::model_state_name(state);
    models += "\",\"backend\":\"local\"";
    if (state == runtime::ModelState::failed) {
      const std::string reason = model->runner->failure_reason();
      models += ",\"reason\":";
      api::append_json_string(models, reason);
      if (!any_failed) first_failed = model->name + ": " + reason;
      any_failed = true;
    } else if (state != runtime::ModelState::ready && !any_not_ready) {
      first_not_ready = model->name + ": " +
                        (state == runtime::ModelState::warming ? std::string("warming up") : std::string("loading"));
      any_not_ready = true;
    }
    models += '}';
  }
  StatusReply reply;
  std::string head;
  if (any_failed) {
    reply.status = 503;
    head = "{\"status\":\"failed\",\"reason\":";
    api::append_json_string(head, first_failed);
  } else if (any_not_ready) {
    reply.status = 503;
    head = "{\"status\":\"starting\",\"reason\":";
    api::append_json_string(head, first_not_ready);
  } else {
    head = "{\"status\":\"ok\"";
  }
  reply.body = head + ",\"models\":{" + models + "}}";
  return reply;
}

std::string models_body(const registry::ModelRegistry& registry, int64_t created, const std::string& owned_by) {
  std::string data;
  std::string models;
  for (const auto& model : registry.models()) {
    if (!data.empty()) data += ',';
    data += "{\"id\":";
    api::append_json_string(data, model->name);
    data += ",\"object\":\"model\",\"created\":" + std::to_string(created) + ",\"owned_by\":";
    api::append_json_string(data, owned_by);
    data += '}';

    if (!models.empty()) models += ',';
    models += "{\"name\":";
    api::append_json_string(models, model->name);
    if (model->pool) {
      models += ",\"description\":";
      api::append_json_string(models, "Served by " + std::to_string(model->pool->replica_count()) + " upstream worker(s)");
      models += ",\"release_date\":null,\"aliases\":";
      append_string_array(models, model->aliases);
      models += ",\"backend\":\"upstream\"}";
      continue;
    }
    const runtime::ModelInfo& info = model->runner->info();
    models += ",\"description\":";
    api::append_json_string(models, info.description);
    models += ",\"release_date\":";
    if (info.release_date) {
      api::append_json_string(models, *info.release_date);
    } else {
      models += "null";
    }
    models += ",\"aliases\":";
    append_string_array(models, model->aliases);
    models += ",\"backend\":\"local\",\"question_types\":[";
    for (size_t i = 0; i < info.question_types.size(); ++i) {
      if (i > 0) models += ',';
      models += '"';
      models += api::question_type_name(info.question_types[i]);
      models += '"';
    }
    models += "],\"max_choice_options\":" + std::to_string(info.max_choice_options) +
              ",\"context_tokens\":" + std::to_string(info.context_tokens) + ",\"confidence_method\":";
    api::append_json_string(models, info.confidence_method);
    models += '}';
  }
  std::string body = "{\"object\":\"list\",\"default_model\":";
  if (registry.default_model()) {
    api::append_json_string(body, *registry.default_model());
  } else {
    body += "null";
  }
  body += ",\"data\":[" + data + "],\"models\":[" + models + "]}";
  return body;
}

}  // namespace s1::server
