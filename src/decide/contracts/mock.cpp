#include "decide/contracts/mock.h"

#include <chrono>
#include <stdexcept>
#include <thread>

#include "decide/answer_math.h"
#include "decide/contract_common.h"
#include "decide/prompt.h"
#include "decide/token_budget.h"

namespace s1::decide {
namespace {

enum class Scores { ramp, uniform };

struct MockSettings {
  Scores scores = Scores::ramp;
  bool choice_only = false;
  size_t max_options = 255;
  ConfidenceMethod confidence = ConfidenceMethod::linear;
  bool fails_warm_up = false;
  std::chrono::milliseconds inference_delay{0};
  size_t max_images = 0;
  std::string description;
};

// The test backend's count for an image: one token per 32x32 tile started, so a request's
// input_tokens shows the size each of its images was decoded to.
int64_t mock_image_tokens(const vision::Image& image) {
  constexpr int64_t tile = 32;
  return ((image.width + tile - 1) / tile) * ((image.height + tile - 1) / tile);
}

class MockPlan : public runtime::Plan {
 public:
  std::vector<size_t> label_counts;
};

// Renders the default prompt (§5.3) with no chat template and counts one token per UTF-8 byte, with
// the state prefix shared by every question.
class MockEngine : public runtime::Engine {
 public:
  explicit MockEngine(MockSettings settings) : settings_(std::move(settings)) {}

  runtime::ModelInfo info() const override {
    runtime::ModelInfo model = served_model_info(
        settings_.description, settings_.max_options, context_tokens, confidence_method_name(settings_.confidence),
        settings_.choice_only
            ? std::vector{api::QuestionType::choice}
            : std::vector{api::QuestionType::choice, api::QuestionType::noul, api::QuestionType::score});
    model.test_backend = true;
    model.max_images = settings_.max_images;
    return model;
  }

  api::Result<std::unique_ptr<runtime::Plan>> prepare(const api::DecisionRequest& request,
                                                      const runtime::PrepareLimits& limits) const override {
    for (const api::Question& question : request.questions) {
      if (settings_.choice_only && question.type != api::QuestionType::choice) {
        return api::ApiError::make(api::ErrorCode::unsupported_question_type,
                                   "This model answers only choice questions");
      }
      if (question.type == api::QuestionType::choice && question.options.size() > settings_.max_options) {
        return api::ApiError::make(api::ErrorCode::too_many_options,
                                   "This model accepts at most " + std::to_string(settings_.max_options) +
                                       " options per question");
      }
    }
    auto plan = std::make_unique<MockPlan>();
    const auto prefix_tokens = static_cast<int64_t>(default_state_prefix(request.state).size());
    plan->input_tokens = prefix_tokens;
    for (const api::RequestImage& image : request.images) plan->input_tokens += mock_image_tokens(image.image);
    for (const api::Question& question : request.questions) {
      const auto block_tokens = static_cast<int64_t>(default_question_block(question).size());
      if (auto error = check_sequence_fits(prefix_tokens + block_tokens, context_tokens)) return *error;
      plan->input_tokens += block_tokens;
      plan->label_counts.push_back(question.label_count());
    }
    if (auto error = check_request_budget(plan->input_tokens, limits.token_budget)) return *error;
    return std::unique_ptr<runtime::Plan>(std::move(plan));
  }

  api::Result<runtime::RawOutputs> run(runtime::Plan& plan) override {
    if (settings_.fails_warm_up) throw std::runtime_error("mock-broken cannot run");
    if (settings_.inference_delay.count() > 0) std::this_thread::sleep_for(settings_.inference_delay);
    runtime::RawOutputs outputs;
    for (const size_t count : static_cast<const MockPlan&>(plan).label_counts) {
      std::vector<double> scores(count, 0.0);
      if (settings_.scores == Scores::ramp) {
        for (size_t i = 0; i < count; ++i) scores[i] = -static_cast<double>(i);
      }
      outputs.label_scores.push_back(std::move(scores));
    }
    return outputs;
  }

  api::Result<std::vector<api::Answer>> finish(const api::DecisionRequest& request, const runtime::Plan& /*plan*/,
                                               runtime::RawOutputs outputs) const override {
    std::vector<api::Answer> answers;
    for (size_t q = 0; q < request.questions.size(); ++q) {
      auto answer = make_answer(request.questions[q].type, outputs.label_scores[q], 1.0, settings_.confidence);
      if (!answer) return answer.error();
      answers.push_back(std::move(answer.value()));
    }
    return answers;
  }

 private:
  static constexpr int64_t context_tokens = 4096;
  MockSettings settings_;
};

}  // namespace

std::unique_ptr<runtime::Engine> make_mock_engine(std::string_view variant) {
  MockSettings settings;
  if (variant == "ramp") {
    settings.description = "Deterministic test backend: label scores -i";
  } else if (variant == "uniform") {
    settings.scores = Scores::uniform;
    settings.description = "Deterministic test backend: equal label scores";
  } else if (variant == "letters") {
    settings.choice_only = true;
    settings.max_options = 26;
    settings.confidence = ConfidenceMethod::entropy;
    settings.description = "Deterministic test backend: letters A-Z, entropy confidence";
  } else if (variant == "images") {
    settings.max_images = 8;
    settings.description = "Deterministic test backend: label scores -i, up to 8 images, one token per 32x32 tile";
  } else if (variant == "broken") {
    settings.fails_warm_up = true;
    settings.description = "Deterministic test backend: warm-up always fails";
  } else if (variant == "slow") {
    settings.inference_delay = std::chrono::seconds(3);
    settings.description = "Deterministic test backend: label scores -i, 3 s per inference";
  } else {
    return nullptr;
  }
  return std::make_unique<MockEngine>(std::move(settings));
}

}  // namespace s1::decide
