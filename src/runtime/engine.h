#pragma once
// What the runtime needs from a loaded model. A contract implements prepare → run → finish; the
// runtime owns when and on which thread each step happens and knows nothing else about the model.

#include "api/request.h"
#include "api/response.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace s1::runtime {

class PrefixCache;

struct PrepareLimits {
  int64_t token_budget = 65536;  // per request, checked against input_tokens before any compute
};

// Everything a contract decided before compute: prompts, token ids, the shared prefix and branches.
class Plan {
 public:
  virtual ~Plan() = default;
  int64_t input_tokens = 0;
  int64_t cached_tokens = 0;
};

// One real label score per option, level or noul side (true, false), per question.
struct RawOutputs {
  std::vector<std::vector<double>> label_scores;
};

struct ModelInfo {
  std::string description;
  std::optional<std::string> release_date;
  std::vector<api::QuestionType> question_types;
  size_t max_choice_options = 255;
  int64_t context_tokens = 0;
  std::string confidence_method = "linear";
  bool test_backend = false;
  // Images per request the contract takes (0: text only, refused with unsupported_media), and its
  // own pixel limit per image (0: the server's); the server's limits apply as well (§11.3).
  size_t max_images = 0;
  uint64_t max_image_pixels = 0;
};

class Engine {
 public:
  virtual ~Engine() = default;

  virtual ModelInfo info() const = 0;

  // Any thread, no compute: contract checks (400 unsupported_question_type, too_many_options), then
  // rendering, tokenisation and the token budget (400 max_tokens_exceeded).
  virtual api::Result<std::unique_ptr<Plan>> prepare(const api::DecisionRequest& request,
                                                      const PrepareLimits& limits) const = 0;

  // Called once before the runner starts: the model's cache of shared-prefix memories, which run and
  // run_batch then use on the executor thread (setting each plan's cached_tokens). An engine that
  // reuses decoder prefixes keeps it and returns true; the default declines it (encoders keep their
  // own candidate caches).
  virtual bool use_prefix_cache(PrefixCache& cache);

  // The executor thread only: the forward pass. Throws only for faults the model cannot recover from.
  virtual api::Result<RawOutputs> run(Plan& plan) = 0;

  // How many requests' plans run_batch takes at once: 1 for a contract whose forward pass serves
  // one request. The runtime never hands run_batch more.
  virtual size_t max_batch_requests() const { return 1; }

  // The executor thread only: several requests' forward passes together, one result per plan in
  // order, each what run would give it alone (up to rounding). The default runs them one by one.
  // Throws as run does: a fault the model cannot recover from fails the whole batch.
  virtual std::vector<api::Result<RawOutputs>> run_batch(std::span<Plan* const> plans);

  // Any thread: readout maths (temperature, softmax, confidence) into answers in question order.
  virtual api::Result<std::vector<api::Answer>> finish(const api::DecisionRequest& request, const Plan& plan,
                                                       RawOutputs outputs) const = 0;

  // The fixed request whose success makes the model ready.
  virtual api::DecisionRequest warm_up_request() const;
};

}  // namespace s1::runtime
