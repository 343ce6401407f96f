#include "decide/contracts/label_token.h"

#include <algorithm>
#include <span>
#include <stdexcept>

#include "decide/answer_math.h"
#include "decide/contract_common.h"
#include "decide/prompt.h"
#include "decide/token_budget.h"
#include "model/checkpoint/load_error.h"
#include "model/families.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace s1::decide {

LabelTokenSettings default_label_token_settings(const std::filesystem::path& model_dir) {
  LabelTokenSettings settings;
  settings.name = std::filesystem::absolute(model_dir).lexically_normal().filename().string();
  if (settings.name.empty()) settings.name = std::filesystem::absolute(model_dir).parent_path().filename().string();
  settings.description = "Chat decoder answering by label-token scores (label-token contract)";
  settings.precision = default_linear_precision();
  return settings;
}

LabelTokenSettings read_label_token_settings(checkpoint::ConfigReader& decision_file, LabelTokenSettings defaults) {
  LabelTokenSettings settings = std::move(defaults);
  read_served_model_identity(decision_file, settings);
  settings.system_prompt = decision_file.optional<std::string>("system_prompt");
  settings.temperature = decision_file.optional<double>("temperature", 1.0);
  if (!(settings.temperature > 0.0)) decision_file.reject("temperature", "must be a number above 0");
  settings.precision = read_precision(decision_file, settings.precision);
  settings.context_tokens = read_context_tokens(decision_file);
  decision_file.finish();
  return settings;
}

std::size_t shared_prefix_length(const std::vector<std::vector<int32_t>>& sequences, std::size_t granularity) {
  // A lone sequence shares nothing: split, it would run as its prefix plus a one-token branch, and each
  // pass streams every weight once more (a 1-row pass costs a whole Qwen3.5-2B weight read, ~120 ms).
  if (sequences.size() < 2) return 0;
  std::size_t length = sequences.front().size();
  for (const auto& sequence : sequences) {
    length = std::min(length, sequence.size());
    const auto mismatch = std::mismatch(sequences.front().begin(), sequences.front().begin() + static_cast<ptrdiff_t>(length),
                                        sequence.begin());
    length = static_cast<std::size_t>(mismatch.first - sequences.front().begin());
  }
  for (const auto& sequence : sequences) {
    if (!sequence.empty()) length = std::min(length, sequence.size() - 1);
  }
  return granularity > 1 ? length / granularity * granularity : length;
}

SharedPrefixPrompts split_at_shared_prefix(const std::vector<std::vector<int32_t>>& prompts, std::size_t granularity) {
  return split_at_prefix_length(prompts, shared_prefix_length(prompts, granularity));
}

SharedPrefixPrompts split_at_prefix_length(const std::vector<std::vector<int32_t>>& prompts, std::size_t prefix_length) {
  SharedPrefixPrompts split;
  if (prompts.empty()) return split;
  split.prefix.assign(prompts.front().begin(), prompts.front().begin() + static_cast<ptrdiff_t>(prefix_length));
  split.input_tokens = static_cast<int64_t>(prefix_length);
  for (const auto& prompt : prompts) {
    split.suffixes.emplace_back(prompt.begin() + static_cast<ptrdiff_t>(prefix_length), prompt.end());
    split.input_tokens += static_cast<int64_t>(split.suffixes.back().size());
  }
  return split;
}

api::Result<SharedPrefixPrompts> encode_question_prompts(
    const api::DecisionRequest& request, const text::ChatTemplate& chat_template, const text::Tokenizer& tokenizer,
    text::Thinking thinking, const std::function<std::vector<text::ChatMessage>(const api::Question&)>& messages_of,
    std::size_t context_tokens, std::size_t granularity, int64_t token_budget) {
  std::vector<std::vector<int32_t>> prompts;
  for (const api::Question& question : request.questions) {
    auto encoded = encode_prompt_within(tokenizer, chat_template.render(messages_of(question), true, thinking),
                                        context_tokens);
    if (!encoded) return encoded.error();
    prompts.push_back(std::move(encoded.value()));
  }
  SharedPrefixPrompts split = split_at_shared_prefix(prompts, granularity);
  if (auto error = check_request_budget(split.input_tokens, token_budget)) return *error;
  return split;
}

std::shared_ptr<const memory::SequenceMemory> prefix_memory(decoder::CausalDecoder& decoder,
                                                            std::span<const int32_t> prefix,
                                                            runtime::PrefixCache* cache, int64_t& reused) {
  reused = 0;
  if (cache == nullptr) return decoder.run_prefix(prefix);
  runtime::PrefixCache::Found found = cache->longest_prefix(prefix);
  reused = static_cast<int64_t>(found.tokens);
  if (found.tokens == prefix.size()) return std::move(found.memory);
  const decoder::Branch rest{prefix.subspan(found.tokens), {}};
  std::shared_ptr<const memory::SequenceMemory> memory =
      std::move(decoder.forward(found.memory.get(), std::span(&rest, 1), true).front().state);
  cache->insert({prefix.begin(), prefix.end()}, memory);
  return memory;
}

std::vector<std::vector<float>> last_token_hidden_rows(decoder::CausalDecoder& decoder,
                                                       const SharedPrefixPrompts& prompts, runtime::PrefixCache* cache,
                                                       int64_t* cached_tokens) {
  int64_t reused = 0;
  std::vector<std::vector<float>> rows;
  if (!prompts.prefix.empty()) {
    const auto prefix = prefix_memory(decoder, prompts.prefix, cache, reused);
    rows = last_token_hidden_rows(decoder, prefix.get(), prompts.suffixes);
  } else if (cache != nullptr && prompts.suffixes.size() == 1) {
    const std::vector<int32_t>& prompt = prompts.suffixes.front();
    const runtime::PrefixCache::Found found = cache->longest_prefix(std::span(prompt).first(prompt.size() - 1));
    reused = static_cast<int64_t>(found.tokens);
    rows = last_token_hidden_rows(
        decoder, found.memory.get(),
        {std::vector<int32_t>(prompt.begin() + static_cast<ptrdiff_t>(found.tokens), prompt.end())});
  } else {
    rows = last_token_hidden_rows(decoder, nullptr, prompts.suffixes);
  }
  if (cached_tokens != nullptr) *cached_tokens = reused;
  return rows;
}

std::vector<std::vector<float>> last_token_hidden_rows(decoder::CausalDecoder& decoder,
                                                       const memory::SequenceMemory* prefix,
                                                       const std::vector<std::vector<int32_t>>& suffixes) {
  std::vector<std::size_t> last_positions;
  last_positions.reserve(suffixes.size());
  for (const auto& suffix : suffixes) last_positions.push_back(suffix.size() - 1);
  std::vector<decoder::Branch> branches;
  for (std::size_t q = 0; q < suffixes.size(); ++q) {
    branches.push_back({suffixes[q], std::span<const std::size_t>(&last_positions[q], 1)});
  }
  // Only the final-norm row of each last position comes back: never full-vocabulary logits.
  std::vector<std::vector<float>> rows;
  for (auto& output : decoder.forward(prefix, branches, false)) rows.push_back(std::move(output.hidden));
  return rows;
}

namespace {

class LabelTokenPlan : public runtime::Plan {
 public:
  SharedPrefixPrompts prompts;                  // one per question
  std::vector<std::vector<int32_t>> label_ids;  // per question, in label order
};

// The single token a label text encodes to, or nullopt.
std::optional<int32_t> single_token(const text::Tokenizer& tokenizer, std::string_view label) {
  const std::vector<int32_t> ids = encode_without_special_tokens(tokenizer, label);
  if (ids.size() != 1) return std::nullopt;
  return ids.front();
}

class LabelTokenEngine : public PrefixReusingEngine {
 public:
  LabelTokenEngine(ChatDecoder model_parts, LabelTokenSettings settings)
      : settings_(std::move(settings)),
        tokenizer_(std::move(model_parts.tokenizer)),
        chat_template_(std::move(model_parts.chat_template)),
        decoder_(std::move(model_parts.decoder)) {
    const decoder::DecoderInfo& model = decoder_->info();
    context_tokens_ = settings_.context_tokens == 0 ? model.max_positions
                                                     : std::min(settings_.context_tokens, model.max_positions);
    const auto required = [&](const std::string& label) {
      const auto id = single_token(tokenizer_, label);
      if (!id || static_cast<std::size_t>(*id) >= model.vocab_size) {
        throw checkpoint::LoadError(model_parts.tokenizer_source + ": the label '" + label +
                                    "' is not a single token within the model's vocabulary, so "
                                    "the label-token contract cannot read it");
      }
      return *id;
    };
    for (std::size_t i = 0; i < api::max_choice_options; ++i) {
      const std::string label = letter_label(i);
      const auto id = i < 26 ? std::optional<int32_t>(required(label)) : single_token(tokenizer_, label);
      // Labels continue past Z only while every one of them is a single token (§5.3).
      if (!id || static_cast<std::size_t>(*id) >= model.vocab_size) break;
      letter_ids_.push_back(*id);
    }
    for (std::size_t level = 0; level < api::max_score_levels; ++level) digit_ids_.push_back(required(std::to_string(level)));
    noul_ids_ = {required("yes"), required("no")};
  }

  runtime::ModelInfo info() const override {
    return served_model_info(settings_.description, letter_ids_.size(), context_tokens_,
                             confidence_method_name(ConfidenceMethod::linear));
  }

  api::Result<std::unique_ptr<runtime::Plan>> prepare(const api::DecisionRequest& request,
                                                      const runtime::PrepareLimits& limits) const override {
    auto plan = std::make_unique<LabelTokenPlan>();
    const std::string state_prefix = default_state_prefix(request.state);
    std::vector<std::vector<int32_t>> prompts;
    for (const api::Question& question : request.questions) {
      if (question.type == api::QuestionType::choice && question.options.size() > letter_ids_.size()) {
        return api::ApiError::make(api::ErrorCode::too_many_options,
                                   "This model accepts at most " + std::to_string(letter_ids_.size()) +
                                       " options per question (each label must be a single token)");
      }
      plan->label_ids.push_back(labels_of(question));
      std::vector<text::ChatMessage> messages;
      if (settings_.system_prompt) messages.push_back({"system", *settings_.system_prompt});
      messages.push_back({"user", state_prefix + default_question_block(question)});
      const std::string prompt = chat_template_.render(messages, true, text::Thinking::disabled);
      auto encoded = encode_prompt_within(tokenizer_, prompt, context_tokens_);
      if (!encoded) return encoded.error();
      prompts.push_back(std::move(encoded.value()));
    }
    plan->prompts = split_at_shared_prefix(prompts, decoder_->info().prefix_granularity);
    plan->input_tokens = plan->prompts.input_tokens;
    if (auto error = check_request_budget(plan->input_tokens, limits.token_budget)) return *error;
    return std::unique_ptr<runtime::Plan>(std::move(plan));
  }

  api::Result<runtime::RawOutputs> run(runtime::Plan& base_plan) override {
    const auto& plan = static_cast<const LabelTokenPlan&>(base_plan);
    const auto rows = last_token_hidden_rows(*decoder_, plan.prompts, prefix_cache(), &base_plan.cached_tokens);
    runtime::RawOutputs raw;
    for (std::size_t q = 0; q < rows.size(); ++q) {
      raw.label_scores.push_back(decoder_->lm_head().gather_logits(rows[q], plan.label_ids[q]));
    }
    return raw;
  }

  api::Result<std::vector<api::Answer>> finish(const api::DecisionRequest& request, const runtime::Plan& /*plan*/,
                                               runtime::RawOutputs outputs) const override {
    std::vector<api::Answer> answers;
    for (std::size_t q = 0; q < request.questions.size(); ++q) {
      auto answer = make_answer(request.questions[q].type, outputs.label_scores[q], settings_.temperature,
                                ConfidenceMethod::linear);
      if (!answer) return answer.error();
      answers.push_back(std::move(answer.value()));
    }
    return answers;
  }

 private:
  std::vector<int32_t> labels_of(const api::Question& question) const {
    switch (question.type) {
      case api::QuestionType::choice:
        return {letter_ids_.begin(), letter_ids_.begin() + static_cast<ptrdiff_t>(question.options.size())};
      case api::QuestionType::score:
        return {digit_ids_.begin(), digit_ids_.begin() + static_cast<ptrdiff_t>(question.levels.size())};
      case api::QuestionType::noul:
        return noul_ids_;
    }
    throw std::logic_error("unknown question type");
  }

  LabelTokenSettings settings_;
  text::Tokenizer tokenizer_;
  text::ChatTemplate chat_template_;
  std::unique_ptr<decoder::CausalDecoder> decoder_;
  std::size_t context_tokens_ = 0;
  std::vector<int32_t> letter_ids_, digit_ids_, noul_ids_;
};

}  // namespace

std::unique_ptr<runtime::Engine> make_label_token_engine(const std::filesystem::path& model_dir,
                                                         const LabelTokenSettings& settings) {
  ChatDecoder model{
      text::Tokenizer::from_file(model_dir / "tokenizer.json"), text::ChatTemplate::from_model_dir(model_dir),
      model::load_causal_decoder(model_dir, settings.precision), (model_dir / "tokenizer.json").string()};
  return make_label_token_engine(std::move(model), settings);
}

std::unique_ptr<runtime::Engine> make_label_token_engine(ChatDecoder model, const LabelTokenSettings& settings) {
  return std::make_unique<LabelTokenEngine>(std::move(model), settings);
}

}  // namespace s1::decide
