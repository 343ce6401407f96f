// LAYA-shaped timing for issue 7: a ModernBERT encoder with laya's decision head
// (src/model/laya) on `--questions` rows of `--tokens` tokens each, packed into one unpadded batch as
// the laya contract runs a request. Make a LAYA-shaped random checkpoint (ModernBERT-large, 421M) with
//   tools/reference/make_tiny_laya.py --large DIR
// Median (p10, p90) of --reps runs after --warmup runs; prints one JSON object.
//
//   s1_modernbert_bench --model-dir DIR [--tokens 512] [--questions 4] [--options 4] [--reps 10]
//                       [--warmup 2] [--threads 2] [--precision fp32|bf16]

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/parallel.h"
#include "model/heads/laya_head.h"
#include "timing.h"

int main(int argc, char** argv) {
  std::string model_dir, precision_name = "bf16";
  int reps = 10, warmup = 2, threads = 2;
  std::size_t tokens = 512, questions = 4, options = 4;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--model-dir") model_dir = value;
    else if (flag == "--tokens") tokens = std::stoul(value);
    else if (flag == "--questions") questions = std::stoul(value);
    else if (flag == "--options") options = std::stoul(value);
    else if (flag == "--reps") reps = std::stoi(value);
    else if (flag == "--warmup") warmup = std::stoi(value);
    else if (flag == "--threads") threads = std::stoi(value);
    else if (flag == "--precision") precision_name = value;
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (model_dir.empty() || (precision_name != "fp32" && precision_name != "bf16") || options == 0 ||
      tokens < 2 * options + 2) {
    std::fprintf(stderr, "usage: s1_modernbert_bench --model-dir DIR [--precision fp32|bf16] ...\n");
    return 2;
  }
  s1::backend::cpu::set_thread_count(threads);
  const auto arithmetic = precision_name == "bf16" ? s1::backend::Arithmetic::bf16 : s1::backend::Arithmetic::fp32;
  s1::laya::LayaModel model(model_dir, arithmetic);
  const auto vocab = static_cast<int32_t>(model.encoder_info().vocab_size);

  std::mt19937 generator(1);
  std::uniform_int_distribution<int32_t> id(0, vocab - 1);
  std::vector<std::vector<int32_t>> ids(questions, std::vector<int32_t>(tokens));
  std::vector<std::size_t> markers;
  for (std::size_t m = 0; m < options; ++m) markers.push_back(1 + 2 * m);  // after [CLS], every other token
  std::vector<s1::laya::Row> rows;
  for (std::size_t q = 0; q < questions; ++q) {
    for (int32_t& value : ids[q]) value = id(generator);
    rows.push_back(s1::laya::Row{ids[q], markers, static_cast<s1::laya::QuestionKind>(q % 3)});
  }
  const s1::bench::Summary summary = s1::bench::timed(warmup, reps, [&] { (void)model.marker_logits(rows); });
  std::printf("{\"model_dir\": \"%s\", \"precision\": \"%s\", \"threads\": %d, \"tokens\": %zu, \"questions\": %zu, "
              "\"request_ms\": %s}\n",
              model_dir.c_str(), precision_name.c_str(), threads, tokens, questions,
              s1::bench::json(summary).c_str());
  return 0;
}
