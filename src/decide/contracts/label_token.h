#pragma once
// The label-token contract (API contract §5.1 and §5.3): any chat decoder answers by the score of one
// label token at the answer position.
//
//   prompt   per question: one user turn = rendered state + blank line + question block (default
//            prompt), an optional system turn from the decision file, the chat template with the
//            generation prompt and thinking off;
//   labels   choice A–Z then AA, AB, … (only while each is a single token: past that 400
//            too_many_options), score digits 0–9, noul yes/no (true side first);
//   score    the label token's logit at the last prompt position (the log-probability up to a
//            constant per position, which the per-question softmax cancels);
//   answers  softmax(s / T) per question with T from the decision file (default 1), linear confidence.
//
// The questions' prompts are tokenised whole; their longest common token prefix (normally the chat
// header and the state) runs once and every question branches from it, all branches in one batch.
// usage.input_tokens counts the shared prefix once plus every branch's own tokens.

#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backend/cpu/precision.h"
#include "model/checkpoint/config_reader.h"
#include "model/decoder/causal_decoder.h"
#include "runtime/engine.h"
#include "runtime/prefix_cache.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace s1::decide {

inline constexpr std::string_view label_token_contract = "label-token";

struct LabelTokenSettings {
  std::string name;
  std::vector<std::string> aliases;
  std::string description;
  std::optional<std::string> system_prompt;
  double temperature = 1.0;
  backend::cpu::Precision precision = backend::cpu::Precision::fp32;
  // 0: the checkpoint's max_position_embeddings.
  std::size_t context_tokens = 0;
};

// Defaults for a checkpoint directory served without a decision file: named after the directory,
// bf16 where the CPU multiplies bf16 natively (AMX), else fp32.
LabelTokenSettings default_label_token_settings(const std::filesystem::path& model_dir);

// Reads this contract's members of an s1serve.json whose "contract" member was already read, over
// `defaults`; unknown members are load errors naming the file and key.
LabelTokenSettings read_label_token_settings(checkpoint::ConfigReader& decision_file, LabelTokenSettings defaults);

// What the contract runs: a chat decoder with its tokenizer and chat template, from a model directory
// or a GGUF file.
struct ChatDecoder {
  text::Tokenizer tokenizer;
  text::ChatTemplate chat_template;
  std::unique_ptr<decoder::CausalDecoder> decoder;
  std::string tokenizer_source;  // names the tokenizer in load errors
};

// Loads the decoder, tokenizer.json and chat template of `model_dir`. Throws checkpoint::LoadError or
// text::TokenizerLoadError naming the file and the problem (e.g. a label that is not a single token).
std::unique_ptr<runtime::Engine> make_label_token_engine(const std::filesystem::path& model_dir,
                                                         const LabelTokenSettings& settings);
// The same over an already loaded chat decoder.
std::unique_ptr<runtime::Engine> make_label_token_engine(ChatDecoder model, const LabelTokenSettings& settings);

// Splits token sequences into a shared prefix and per-sequence suffixes: the longest common prefix,
// rounded down to a multiple of `granularity`, and always leaving each sequence at least one token.
// One sequence alone has no shared prefix (0): it runs whole, in one pass.
std::size_t shared_prefix_length(const std::vector<std::vector<int32_t>>& sequences, std::size_t granularity);

// One request's prompts split at their shared prefix (shared_prefix_length): the prefix runs once and
// each suffix branches from it. input_tokens counts the prefix once plus every suffix.
struct SharedPrefixPrompts {
  std::vector<int32_t> prefix;
  std::vector<std::vector<int32_t>> suffixes;
  int64_t input_tokens = 0;
};
SharedPrefixPrompts split_at_shared_prefix(const std::vector<std::vector<int32_t>>& prompts, std::size_t granularity);
// The same split after the first `prefix_length` tokens, which every prompt must share and exceed.
SharedPrefixPrompts split_at_prefix_length(const std::vector<std::vector<int32_t>>& prompts, std::size_t prefix_length);

// Every question's prompt (messages_of(question) through the chat template with the generation prompt
// and `thinking`) encoded within `context_tokens` and split at their shared prefix, then the request's
// `token_budget` checked: the plan of a contract that reads the last token of one prompt per question.
api::Result<SharedPrefixPrompts> encode_question_prompts(
    const api::DecisionRequest& request, const text::ChatTemplate& chat_template, const text::Tokenizer& tokenizer,
    text::Thinking thinking, const std::function<std::vector<text::ChatMessage>(const api::Question&)>& messages_of,
    std::size_t context_tokens, std::size_t granularity, int64_t token_budget);

// The memory after `prefix` (not empty). With a `cache`: from the longest part of it the cache holds,
// the rest run as one extension, and the whole prefix then cached for later requests; without one,
// run whole. `reused` gets the number of tokens taken from the cache.
std::shared_ptr<const memory::SequenceMemory> prefix_memory(decoder::CausalDecoder& decoder,
                                                            std::span<const int32_t> prefix,
                                                            runtime::PrefixCache* cache, int64_t& reused);

// Runs the prefix once and every suffix branched from it as one batch; the final-norm hidden row at
// each suffix's last token, in suffix order. With a `cache`, the longest cached part of the prefix
// is reused (the rest runs as one extension, and the whole prefix is cached for later requests); a
// single prompt without a shared prefix branches from the longest cached part of it that leaves at
// least its last token. *cached_tokens gets the number of tokens reused.
std::vector<std::vector<float>> last_token_hidden_rows(decoder::CausalDecoder& decoder,
                                                       const SharedPrefixPrompts& prompts,
                                                       runtime::PrefixCache* cache = nullptr,
                                                       int64_t* cached_tokens = nullptr);
// Every suffix branched from an existing `prefix` state (nullptr: the empty sequence) as one batch, for
// contracts that branch again from the same state later; rows as above.
std::vector<std::vector<float>> last_token_hidden_rows(decoder::CausalDecoder& decoder,
                                                       const memory::SequenceMemory* prefix,
                                                       const std::vector<std::vector<int32_t>>& suffixes);

// A decoder contract that reuses shared prefixes across requests: it keeps the runtime's cache.
class PrefixReusingEngine : public runtime::Engine {
 public:
  bool use_prefix_cache(runtime::PrefixCache& cache) final {
    prefix_cache_ = &cache;
    return true;
  }

 protected:
  // nullptr until the runtime hands one over (a contract used without a runner caches nothing).
  [[nodiscard]] runtime::PrefixCache* prefix_cache() const { return prefix_cache_; }

 private:
  runtime::PrefixCache* prefix_cache_ = nullptr;
};

}  // namespace s1::decide
