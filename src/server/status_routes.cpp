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

// A TypeSafe entry's members, shared by a model's canonical and alias entries: `described` goes
// before the canonical entry's aliases, `capabilities` after them.
struct EntryMembers {
  std::string described;
  std::string capabilities;
};

EntryMembers entry_members(const registry::ServedModel& model, const registry::ServerConfig& config) {
  EntryMembers members;
  std::string& described = members.described;
  described = ",\"description\":";
  if (model.pool) {
    api::append_json_string(described,
                            "Served by " + std::to_string(model.pool->replica_count()) + " upstream worker(s)");
  } else {
    api::append_json_string(described, model.runner->info().description);
  }
  described += ",\"release_date\":";
  api::append_json_string(described, model.release_date);
  std::string& out = members.capabilities;
  if (model.pool) {
    out = ",\"backend\":\"upstream\"";
    return members;
  }
  // Which bytes this process serves, so replicas can be compared (contract §11.6); a test backend
  // has no checkpoint.
  out += ",\"served_by\":{\"s1serve\":\"" S1SERVE_VERSION "\",\"checkpoint\":";
  const std::optional<registry::CheckpointIdentity> identity =
      model.checkpoint ? std::optional(model.checkpoint->snapshot()) : std::nullopt;
  const std::optional<std::string> label = identity ? identity->label() : std::nullopt;
  if (label) {
    api::append_json_string(out, *label);
  } else {
    out += "null";
  }
  out += ",\"dtype\":";
  if (identity && !identity->dtype.empty()) {
    api::append_json_string(out, identity->dtype);
  } else {
    out += "null";
  }
  out += ",\"device\":\"cpu\"}";
  const runtime::ModelInfo& info = model.runner->info();
  out += ",\"backend\":\"local\",\"question_types\":[";
  for (size_t i = 0; i < info.question_types.size(); ++i) {
    if (i > 0) out += ',';
    out += '"';
    out += api::question_type_name(info.question_types[i]);
    out += '"';
  }
  out += "],\"max_choice_options\":" + std::to_string(info.max_choice_options) +
         ",\"context_tokens\":" + std::to_string(info.context_tokens) + ",\"confidence_method\":";
  api::append_json_string(out, info.confidence_method);
  if (info.test_backend) out += ",\"test_backend\":true";
  out += ",\"max_questions\":" + std::to_string(config.max_questions) +
         ",\"max_body_bytes\":" + std::to_string(config.max_body_bytes) +
         ",\"max_images\":" + std::to_string(std::min(config.max_images, info.max_images));
  return members;
}

std::string openai_model_object(std::string_view id, const ModelListing& listing) {
  std::string out = "{\"id\":";
  api::append_json_string(out, id);
  out += ",\"object\":\"model\",\"created\":" + std::to_string(listing.created) + ",\"owned_by\":";
  api::append_json_string(out, listing.config.owned_by);
  out += '}';
  return out;
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

std::string models_body(const registry::ModelRegistry& registry, const ModelListing& listing) {
  std::string data;
  std::string models;
  for (const auto& model : registry.models()) {
    if (!data.empty()) data += ',';
    data += openai_model_object(model->name, listing);

    const EntryMembers members = entry_members(*model, listing.config);
    if (!models.empty()) models += ',';
    models += "{\"name\":";
    api::append_json_string(models, model->name);
    models += members.described + ",\"aliases\":";
    append_string_array(models, model->aliases);
    models += members.capabilities + '}';
    // TypeSafe's SDK lists names a request may send, aliases included (contract §11.1).
    for (const std::string& alias : model->aliases) {
      models += ",{\"name\":";
      api::append_json_string(models, alias);
      models += ",\"alias_of\":";
      api::append_json_string(models, model->name);
      models += members.described + members.capabilities + '}';
    }
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

std::optional<std::string> model_body(const registry::ModelRegistry& registry, std::string_view id,
                                      const ModelListing& listing) {
  if (registry.resolve(id) == nullptr) return std::nullopt;
  return openai_model_object(id, listing);
}

}  // namespace s1::server
