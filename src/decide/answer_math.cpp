#include "decide/answer_math.h"

#include <algorithm>
#include <cmath>

namespace s1::decide {

std::string_view confidence_method_name(ConfidenceMethod method) {
  switch (method) {
    case ConfidenceMethod::linear: return "linear";
    case ConfidenceMethod::entropy: return "entropy";
    case ConfidenceMethod::max_probability: return "max_probability";
    case ConfidenceMethod::top_minus_mean: return "top_minus_mean";
  }
  return "linear";
}

std::vector<double> softmax(std::span<const double> label_scores, double temperature) {
  if (label_scores.empty() || !(temperature > 0.0) || !std::isfinite(temperature)) return {};
  double maximum = label_scores[0];
  for (const double score : label_scores) {
    if (!std::isfinite(score)) return {};
    maximum = std::max(maximum, score);
  }
  std::vector<double> probabilities(label_scores.size());
  double sum = 0.0;
  for (size_t i = 0; i < label_scores.size(); ++i) {
    probabilities[i] = std::exp((label_scores[i] - maximum) / temperature);
    sum += probabilities[i];
  }
  for (double& p : probabilities) {
    p = std::clamp(p / sum, 0.0, 1.0);
    if (!std::isfinite(p)) return {};
  }
  return probabilities;
}

double linear_confidence(std::span<const double> probabilities) {
  const double n = static_cast<double>(probabilities.size());
  if (probabilities.size() <= 1) return 1.0;
  const double maximum = *std::max_element(probabilities.begin(), probabilities.end());
  return std::clamp((n * maximum - 1.0) / (n - 1.0), 0.0, 1.0);
}

double entropy_confidence(std::span<const double> probabilities) {
  if (probabilities.size() <= 1) return 1.0;
  double entropy = 0.0;
  for (const double p : probabilities) {
    if (p > 0.0) entropy -= p * std::log(p);
  }
  return std::clamp(1.0 - entropy / std::log(static_cast<double>(probabilities.size())), 0.0, 1.0);
}

double max_probability_confidence(std::span<const double> probabilities) {
  return *std::max_element(probabilities.begin(), probabilities.end());
}

double top_minus_mean_confidence(std::span<const double> probabilities) {
  if (probabilities.size() < 2) return 1.0;
  const auto top = std::max_element(probabilities.begin(), probabilities.end());
  double rest = 0.0;
  for (auto p = probabilities.begin(); p != probabilities.end(); ++p) {
    if (p != top) rest += *p;
  }
  const double mean_rest = rest / static_cast<double>(probabilities.size() - 1);
  return std::clamp(*top - mean_rest, 0.0, 1.0);
}

double score_confidence(std::span<const double> probabilities) {
  const size_t n = probabilities.size();
  const size_t mode = static_cast<size_t>(std::max_element(probabilities.begin(), probabilities.end()) -
                                          probabilities.begin());
  const double middle = (static_cast<double>(n) - 1.0) / 2.0;
  double spread = 0.0;
  for (size_t i = 0; i < n; ++i) spread += std::abs(static_cast<double>(i) - middle);
  spread /= static_cast<double>(n);
  double distance = 0.0;
  for (size_t i = 0; i < n; ++i) {
    distance += probabilities[i] * std::abs(static_cast<double>(i) - static_cast<double>(mode));
  }
  return std::clamp(1.0 - distance / spread, 0.0, 1.0);
}

namespace {

// The API's linear method has a score variant (§5.4); every other method reads choice and score alike.
double confidence(ConfidenceMethod method, api::QuestionType type, std::span<const double> p) {
  switch (method) {
    case ConfidenceMethod::entropy: return entropy_confidence(p);
    case ConfidenceMethod::max_probability: return max_probability_confidence(p);
    case ConfidenceMethod::top_minus_mean: return top_minus_mean_confidence(p);
    case ConfidenceMethod::linear: break;
  }
  return type == api::QuestionType::score ? score_confidence(p) : linear_confidence(p);
}

}  // namespace

api::Result<api::Answer> make_answer(api::QuestionType type, std::span<const double> label_scores,
                                     double temperature, ConfidenceMethod method) {
  api::Answer answer;
  answer.type = type;
  answer.probabilities = softmax(label_scores, temperature);
  if (answer.probabilities.empty()) {
    return api::ApiError::make(api::ErrorCode::internal_error, "The model produced a non-finite label score");
  }
  const auto& p = answer.probabilities;
  switch (type) {
    case api::QuestionType::noul:
      break;
    case api::QuestionType::choice:
      // max_element returns the first maximum: the earliest option wins exact ties.
      answer.choice_index = static_cast<size_t>(std::max_element(p.begin(), p.end()) - p.begin());
      answer.confidence = confidence(method, type, p);
      break;
    case api::QuestionType::score: {
      double expected = 0.0;
      for (size_t i = 0; i < p.size(); ++i) expected += static_cast<double>(i) * p[i];
      answer.score = std::clamp(expected, 0.0, static_cast<double>(p.size() - 1));
      answer.confidence = confidence(method, type, p);
      break;
    }
  }
  if (!std::isfinite(answer.confidence) || !std::isfinite(answer.score)) {
    return api::ApiError::make(api::ErrorCode::internal_error, "The model produced a non-finite answer");
  }
  return answer;
}

}  // namespace s1::decide
