// Decoder prefill timing for docs/benchmarks/decoder-prefill.md, shaped like
// bench/peers/decoder_prefill_peers.py: a `--tokens`-token prefill (batch 1) of a checkpoint
// directory, and the cost of a request with 5 questions branched from a 200-token state against
// the same state with 1 question, each run as the label-token contracts run it. Median (p10, p90) of --reps runs after
// --warmup runs.
//
// DIR may also be a GGUF file (docs/benchmarks/quantized.md: its Q8_0/Q4_K weights stay quantised).
//
//   s1_decoder_bench --model-dir DIR|FILE.gguf [--tokens 256] [--reps 10] [--warmup 2] [--threads 2]
//                    [--precision fp32|bf16] [--state 200] [--question 40] [--questions 5]
// Prints one JSON object.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/parallel.h"
#include "decide/contracts/label_token.h"
#include "model/checkpoint/gguf.h"
#include "model/checkpoint/mapped_file.h"
#include "model/families.h"
#include "timing.h"

namespace {

using s1::bench::json;
using s1::bench::Summary;
using s1::bench::timed;

std::vector<int32_t> random_ids(std::size_t count, std::size_t vocab, unsigned seed) {
  std::mt19937 generator(seed);
  std::uniform_int_distribution<int32_t> id(0, static_cast<int32_t>(std::min<std::size_t>(vocab, 100000) - 1));
  std::vector<int32_t> ids(count);
  for (int32_t& value : ids) value = id(generator);
  return ids;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_dir, precision_name = "bf16";
  int reps = 10, warmup = 2, threads = 2;
  std::size_t tokens = 256, state = 200, question = 40, questions = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--model-dir")
      model_dir = value;
    else if (flag == "--tokens")
      tokens = std::stoul(value);
    else if (flag == "--reps")
      reps = std::stoi(value);
    else if (flag == "--warmup")
      warmup = std::stoi(value);
    else if (flag == "--threads")
      threads = std::stoi(value);
    else if (flag == "--precision")
      precision_name = value;
    else if (flag == "--state")
      state = std::stoul(value);
    else if (flag == "--question")
      question = std::stoul(value);
    else if (flag == "--questions")
      questions = std::stoul(value);
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (model_dir.empty() || (precision_name != "fp32" && precision_name != "bf16")) {
    std::fprintf(stderr, "usage: s1_decoder_bench --model-dir DIR [--precision fp32|bf16] ...\n");
    return 2;
  }
  s1::backend::cpu::set_thread_count(threads);
  const auto precision =
      precision_name == "bf16" ? s1::backend::cpu::Precision::bf16 : s1::backend::cpu::Precision::fp32;
  std::unique_ptr<s1::decoder::CausalDecoder> decoder;
  if (model_dir.ends_with(".gguf")) {
    const auto mapped = s1::checkpoint::MappedFile::open(model_dir);
    const auto file = s1::checkpoint::parse_gguf(mapped.bytes(), model_dir);
    decoder = s1::model::load_gguf_causal_decoder(
        model_dir, file.require(file.get_string("general.architecture"), "general.architecture"), precision);
  } else {
    decoder = s1::model::load_causal_decoder(model_dir, precision);
  }
  const std::size_t vocab = decoder->info().vocab_size;

  const std::vector<int32_t> prompt = random_ids(tokens, vocab, 1);
  const std::size_t last = tokens - 1;
  const s1::decoder::Branch whole{prompt, std::span<const std::size_t>(&last, 1)};
  const Summary prefill = timed(
      warmup, reps, [&] { (void)decoder->forward(nullptr, std::span<const s1::decoder::Branch>(&whole, 1), false); });

  const std::vector<int32_t> state_ids = random_ids(state, vocab, 2);
  std::vector<std::vector<int32_t>> question_ids;
  for (std::size_t q = 0; q < questions; ++q)
    question_ids.push_back(random_ids(question, vocab, 3 + static_cast<unsigned>(q)));
  // As the label-token contracts run a request: the prompts split at their shared prefix (the state),
  // which runs once, and each question's rest branched from it; one question alone runs whole.
  const auto request = [&](std::size_t count) {
    std::vector<std::vector<int32_t>> prompts;
    for (std::size_t q = 0; q < count; ++q) {
      prompts.push_back(state_ids);
      prompts.back().insert(prompts.back().end(), question_ids[q].begin(), question_ids[q].end());
    }
    (void)s1::decide::last_token_hidden_rows(
        *decoder, s1::decide::split_at_shared_prefix(prompts, decoder->info().prefix_granularity));
  };
  const Summary one_question = timed(warmup, reps, [&] { request(1); });
  const Summary many_questions = timed(warmup, reps, [&] { request(questions); });

  std::printf(
      "{\"family\": \"%s\", \"precision\": \"%s\", \"threads\": %d, \"tokens\": %zu, \"prefill_ms\": %s, "
      "\"prefill_tokens_per_s\": %.1f, \"state\": %zu, \"question\": %zu, \"one_question_ms\": %s, "
      "\"questions\": %zu, \"many_questions_ms\": %s, \"many_over_one\": %.3f}\n",
      decoder->info().family.c_str(), precision_name.c_str(), threads, tokens, json(prefill).c_str(),
      static_cast<double>(tokens) / (prefill.median_ms / 1000.0), state, question, json(one_question).c_str(),
      questions, json(many_questions).c_str(), many_questions.median_ms / one_question.median_ms);
  return 0;
}
