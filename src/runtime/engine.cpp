#include "runtime/engine.h"

namespace s1::runtime {

bool Engine::use_prefix_cache(PrefixCache& /*cache*/) { return false; }

std::vector<api::Result<RawOutputs>> Engine::run_batch(std::span<Plan* const> plans) {
  std::vector<api::Result<RawOutputs>> outputs;
  outputs.reserve(plans.size());
  for (Plan* plan : plans) outputs.push_back(run(*plan));
  return outputs;
}

api::DecisionRequest Engine::warm_up_request() const {
  api::DecisionRequest request;
  request.state = "Ticket: I was charged twice for my subscription this month.";
  const ModelInfo model = info();
  for (const api::QuestionType type : model.question_types) {
    api::Question question;
    question.type = type;
    question.key = std::string(api::question_type_name(type));
    switch (type) {
      case api::QuestionType::choice:
        question.instructions = "Which team should handle this ticket?";
        question.options = {{"billing", "Payments and invoices"}, {"technical", nullptr}};
        break;
      case api::QuestionType::score:
        question.instructions = "How upset is the customer?";
        question.levels = {"calm", "annoyed", "furious"};
        break;
      case api::QuestionType::noul:
        question.instructions = "Does the customer ask for a refund?";
        break;
    }
    request.questions.push_back(std::move(question));
  }
  return request;
}

}  // namespace s1::runtime
