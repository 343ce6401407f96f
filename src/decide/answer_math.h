#pragma once
// The contract's default answer maths (§5.1, §5.4): per-question softmax with temperature in double
// precision, the linear and entropy confidence methods, first-option ties.

#include "api/errors.h"
#include "api/response.h"

#include <span>
#include <string_view>

namespace s1::decide {

// linear and entropy are the API's (§5.4). The others are models' own reference confidences, for
// choice and score alike: max_probability (p_max) is JEMM's, top_minus_mean CLM's.
enum class ConfidenceMethod { linear, entropy, max_probability, top_minus_mean };

std::string_view confidence_method_name(ConfidenceMethod method);

// pᵢ = softmax(sᵢ / T), maximum subtracted first, clamped to [0, 1]. Empty when a score or the result
// is not finite.
std::vector<double> softmax(std::span<const double> label_scores, double temperature);

double linear_confidence(std::span<const double> probabilities);
double entropy_confidence(std::span<const double> probabilities);
double max_probability_confidence(std::span<const double> probabilities);
// p_max − mean of the other probabilities (the first maximum is the top), clamped to [0, 1]; 1 for
// fewer than two.
double top_minus_mean_confidence(std::span<const double> probabilities);
double score_confidence(std::span<const double> probabilities);

// One answer from one question's label scores; 500 internal_error when anything is not finite.
api::Result<api::Answer> make_answer(api::QuestionType type, std::span<const double> label_scores,
                                     double temperature, ConfidenceMethod method);

}  // namespace s1::decide
