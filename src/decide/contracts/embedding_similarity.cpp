#include "decide/contracts/embedding_similarity.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <span>
#include <string_view>
#include <unordered_map>

#include "decide/answer_math.h"
#include "decide/contract_common.h"
#include "decide/prompt.h"
#include "decide/token_budget.h"
#include "model/bert/sentence_encoder.h"
#include "model/checkpoint/load_error.h"

namespace s1::decide {

// ---- settings and texts ----------------------------------------------------------------------------

EmbeddingSimilaritySettings read_embedding_similarity_settings(checkpoint::ConfigReader& decision_file) {
  EmbeddingSimilaritySettings settings;
  settings.name = decision_file.required<std::string>("name");
  if (settings.name.empty()) decision_file.reject("name", "must not be empty");
  settings.aliases = decision_file.optional<std::vector<std::string>>("aliases", {});
  settings.description = decision_file.optional<std::string>("description", "");
  settings.similarity_scale = decision_file.optional<double>("similarity_scale", 20.0);
  if (!(settings.similarity_scale > 0.0) || !std::isfinite(settings.similarity_scale)) {
    decision_file.reject("similarity_scale", "must be a positive number");
  }
  if (auto dtype = decision_file.optional<std::string>("dtype")) {
    const auto precision = parse_precision(*dtype);
    if (!precision) decision_file.reject("dtype", "must be \"fp32\" or \"bf16\"");
    settings.precision = *precision;
  }
  const int64_t cache = decision_file.optional<int64_t>("candidate_cache_entries", 4096);
  if (cache < 0) decision_file.reject("candidate_cache_entries", "must be 0 or more");
  settings.candidate_cache_entries = static_cast<size_t>(cache);
  decision_file.finish();
  return settings;
}

std::vector<std::string> candidate_texts(const api::Question& question) {
  // Question-aware phrasing (docs/models.md, measured on tests/parity/minilm/zeroshot.jsonl): a bare
  // option name or level word is a weak point in embedding space, and "not " + a sentence embeds
  // almost like the sentence. Options carry the question they answer; levels become a statement;
  // instruction-only nouls put "yes, " / "no, " before the same sentence.
  const std::string instructions = question.instructions.is_null() ? std::string() : render_text(question.instructions);
  std::vector<std::string> texts;
  switch (question.type) {
    case api::QuestionType::choice:
      for (const api::ChoiceOption& option : question.options) {
        std::string text = instructions.empty() ? option.name : instructions + " " + option.name;
        if (!option.description.is_null()) text += ": " + render_text(option.description);
        texts.push_back(std::move(text));
      }
      break;
    case api::QuestionType::score:
      for (const api::Json& level : question.levels) texts.push_back("This is " + render_text(level) + ".");
      break;
    case api::QuestionType::noul: {
      const bool has_true = !question.noul_true.is_null();
      const bool from_instructions = !has_true && !question.instructions.is_null();
      std::string yes = has_true            ? render_text(question.noul_true)
                        : from_instructions ? "yes, " + instructions
                                            : std::string("yes");
      std::string no = !question.noul_false.is_null() ? render_text(question.noul_false)
                       : from_instructions            ? "no, " + instructions
                                                      : "not " + yes;
      texts.push_back(std::move(yes));
      texts.push_back(std::move(no));
      break;
    }
  }
  return texts;
}

std::filesystem::path models_directory() {
  if (const char* root = std::getenv("S1SERVE_MODELS"); root != nullptr && *root != '\0') return root;
  const char* home = std::getenv("HOME");
  return std::filesystem::path(home != nullptr ? home : "") / ".local" / "share" / "s1serve" / "models";
}

std::filesystem::path default_model_directory() { return models_directory() / "all-minilm-l6-v2"; }

bool is_default_model_name(std::string_view name) { return name == "minilm" || name == "all-minilm-l6-v2"; }

// ---- the engine --------------------------------------------------------------------------------------

namespace {

class EmbeddingPlan : public runtime::Plan {
 public:
  std::vector<int32_t> state_ids;
  std::vector<std::string> texts;                    // distinct candidate texts of the request
  std::vector<std::vector<int32_t>> text_ids;        // their token ids
  std::vector<std::vector<size_t>> question_labels;  // per question: indices into texts, label order
};

class EmbeddingSimilarityEngine : public runtime::Engine {
 public:
  EmbeddingSimilarityEngine(bert::SentenceEncoder encoder, const EmbeddingSimilaritySettings& settings)
      : encoder_(std::move(encoder)), settings_(settings), cache_(settings.candidate_cache_entries) {}

  runtime::ModelInfo info() const override {
    return served_model_info(settings_.description, api::max_choice_options, encoder_.max_seq_length(),
                             confidence_method_name(ConfidenceMethod::linear));
  }

  api::Result<std::unique_ptr<runtime::Plan>> prepare(const api::DecisionRequest& request,
                                                      const runtime::PrepareLimits& limits) const override {
    auto plan = std::make_unique<EmbeddingPlan>();
    // Longer texts are truncated to max_seq_length, as sentence-transformers embeds them (the
    // model's documented behaviour), so every sequence fits the context by construction.
    plan->state_ids = encoder_.tokenize(render_text(request.state)).ids;
    plan->input_tokens = static_cast<int64_t>(plan->state_ids.size());
    std::unordered_map<std::string, size_t> seen;
    for (const api::Question& question : request.questions) {
      std::vector<size_t> labels;
      for (std::string& text : candidate_texts(question)) {
        auto [found, inserted] = seen.try_emplace(text, plan->texts.size());
        if (inserted) {
          plan->text_ids.push_back(encoder_.tokenize(text).ids);
          plan->texts.push_back(std::move(text));
        }
        plan->input_tokens += static_cast<int64_t>(plan->text_ids[found->second].size());
        labels.push_back(found->second);
      }
      plan->question_labels.push_back(std::move(labels));
    }
    if (auto error = check_request_budget(plan->input_tokens, limits.token_budget)) return *error;
    return std::unique_ptr<runtime::Plan>(std::move(plan));
  }

  api::Result<runtime::RawOutputs> run(runtime::Plan& plan) override {
    runtime::Plan* const plans[] = {&plan};
    return std::move(run_batch(plans).front());
  }

  // The encoder packs sequences without padding, so a batch is bounded only by the runtime's limits
  // (and split into forwards of max_batch_tokens by the encoder).
  size_t max_batch_requests() const override { return std::numeric_limits<size_t>::max(); }

  // One encoder call for the batch: every request's state, then each candidate text that neither the
  // cache nor an earlier request of the batch has.
  std::vector<api::Result<runtime::RawOutputs>> run_batch(std::span<runtime::Plan* const> base_plans) override {
    std::vector<const EmbeddingPlan*> plans;
    for (runtime::Plan* plan : base_plans) plans.push_back(static_cast<const EmbeddingPlan*>(plan));
    const size_t width = encoder_.dimension();
    // The batch's candidate embeddings by distinct text, copied out of the cache so that evictions
    // made by this very batch (a cache smaller than the batch) cannot invalidate them.
    std::unordered_map<std::string_view, size_t> slot_of;
    std::vector<float> candidates;
    std::vector<std::span<const int32_t>> sequences;
    for (const EmbeddingPlan* plan : plans) sequences.emplace_back(plan->state_ids);
    std::vector<std::pair<size_t, std::string_view>> missing;  // slot and text, in sequence order
    for (const EmbeddingPlan* plan : plans) {
      for (size_t i = 0; i < plan->texts.size(); ++i) {
        const auto [found, inserted] = slot_of.try_emplace(plan->texts[i], slot_of.size());
        if (!inserted) continue;
        candidates.resize(candidates.size() + width);
        if (const std::vector<float>* cached = cache_.find(plan->texts[i])) {
          std::copy(cached->begin(), cached->end(), candidates.end() - static_cast<ptrdiff_t>(width));
        } else {
          missing.emplace_back(found->second, plan->texts[i]);
          sequences.emplace_back(plan->text_ids[i]);
        }
      }
    }
    const std::vector<float> embedded = encoder_.embed(std::span<const std::span<const int32_t>>(sequences));
    for (size_t m = 0; m < missing.size(); ++m) {
      const auto row = embedded.begin() + static_cast<ptrdiff_t>((plans.size() + m) * width);
      const auto [slot, text] = missing[m];
      std::copy(row, row + static_cast<ptrdiff_t>(width), candidates.begin() + static_cast<ptrdiff_t>(slot * width));
      cache_.insert(std::string(text), std::vector<float>(row, row + static_cast<ptrdiff_t>(width)));
    }

    std::vector<api::Result<runtime::RawOutputs>> results;
    for (size_t p = 0; p < plans.size(); ++p) {
      const EmbeddingPlan& plan = *plans[p];
      const std::span<const float> state(embedded.data() + p * width, width);
      // Cosines of unit vectors: fp32 components, products and sums in float64, left to right (as
      // the reference).
      std::vector<double> similarity(plan.texts.size());
      for (size_t i = 0; i < plan.texts.size(); ++i) {
        const size_t slot = slot_of.at(plan.texts[i]);
        similarity[i] = unit_vector_dot(state, std::span<const float>(candidates).subspan(slot * width, width));
      }
      runtime::RawOutputs outputs;
      for (const std::vector<size_t>& labels : plan.question_labels) {
        std::vector<double> scores;
        scores.reserve(labels.size());
        for (const size_t label : labels) scores.push_back(similarity[label]);
        outputs.label_scores.push_back(std::move(scores));
      }
      results.emplace_back(std::move(outputs));
    }
    return results;
  }

  api::Result<std::vector<api::Answer>> finish(const api::DecisionRequest& request, const runtime::Plan& /*plan*/,
                                               runtime::RawOutputs outputs) const override {
    std::vector<api::Answer> answers;
    for (size_t q = 0; q < request.questions.size(); ++q) {
      // softmax(sᵢ / T) with T = 1/scale, computed as the reference does: logits scale·sᵢ, T = 1.
      std::vector<double> logits = std::move(outputs.label_scores[q]);
      for (double& logit : logits) logit *= settings_.similarity_scale;
      auto answer = make_answer(request.questions[q].type, logits, 1.0, ConfidenceMethod::linear);
      if (!answer) return answer.error();
      answers.push_back(std::move(answer.value()));
    }
    return answers;
  }

 private:
  bert::SentenceEncoder encoder_;
  EmbeddingSimilaritySettings settings_;
  EmbeddingCache cache_;
};

}  // namespace

std::unique_ptr<runtime::Engine> make_embedding_similarity_engine(const std::filesystem::path& model_dir,
                                                                   const EmbeddingSimilaritySettings& settings) {
  return std::make_unique<EmbeddingSimilarityEngine>(bert::SentenceEncoder::open(model_dir, settings.precision),
                                                     settings);
}

}  // namespace s1::decide
