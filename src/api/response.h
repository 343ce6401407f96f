#pragma once
// The typed answer of a decision and its System One serialisation (contract §3).

#include "api/request.h"

#include <cstdint>
#include <string>
#include <vector>

namespace s1::api {

struct Answer {
  QuestionType type = QuestionType::noul;
  std::vector<double> probabilities;  // label order: options, levels, or (true, false) for noul
  size_t choice_index = 0;            // choice: the argmax, earliest on ties
  double confidence = 0.0;            // choice and score
  double score = 0.0;                 // score: Σ i·pᵢ
};

struct DecisionResult {
  std::string model;  // canonical id
  std::vector<Answer> answers;  // request order
  int64_t input_tokens = 0;
  int64_t cached_tokens = 0;  // part of input_tokens reused from an earlier request
};

std::string serialize_system_one_response(const DecisionRequest& request, const DecisionResult& result);

}  // namespace s1::api
