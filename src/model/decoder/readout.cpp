#include "model/decoder/readout.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace s1::decoder {

std::vector<double> log_softmax(std::span<const float> logits) {
  if (logits.empty()) throw std::invalid_argument("log_softmax of an empty row");
  const double max = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (const float value : logits) sum += std::exp(static_cast<double>(value) - max);
  const double log_sum = max + std::log(sum);
  std::vector<double> result(logits.size());
  std::transform(logits.begin(), logits.end(), result.begin(),
                 [&](float value) { return static_cast<double>(value) - log_sum; });
  return result;
}

double sequence_log_likelihood(std::span<const float> logits, std::size_t vocab,
                               std::span<const int32_t> continuation) {
  if (vocab == 0 || logits.size() != continuation.size() * vocab) {
    throw std::invalid_argument("logits do not match the continuation");
  }
  double total = 0.0;
  for (std::size_t i = 0; i < continuation.size(); ++i) {
    const int32_t id = continuation[i];
    if (id < 0 || static_cast<std::size_t>(id) >= vocab) throw std::out_of_range("continuation id out of range");
    total += log_softmax(logits.subspan(i * vocab, vocab))[static_cast<std::size_t>(id)];
  }
  return total;
}

}  // namespace s1::decoder
