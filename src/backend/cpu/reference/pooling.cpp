#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

#include "backend/cpu/reference/reference.h"

namespace s1::backend::cpu::reference {

void mean_pool(std::span<const float> hidden, std::span<const std::size_t> lengths, std::size_t seq,
               std::span<float> out) {
  const std::size_t batch = lengths.size();
  assert(batch > 0 && seq > 0 && hidden.size() % (batch * seq) == 0);
  const std::size_t width = hidden.size() / (batch * seq);
  assert(out.size() == batch * width);
  std::vector<double> sum(width);
  for (std::size_t b = 0; b < batch; ++b) {
    assert(lengths[b] <= seq);
    std::fill(sum.begin(), sum.end(), 0.0);
    for (std::size_t t = 0; t < lengths[b]; ++t)
      for (std::size_t c = 0; c < width; ++c) sum[c] += hidden[(b * seq + t) * width + c];
    // torch's sentence-transformers pooling divides by max(count, 1e-9): a zero row for length 0.
    const double count = std::max<double>(static_cast<double>(lengths[b]), 1e-9);
    for (std::size_t c = 0; c < width; ++c) out[b * width + c] = static_cast<float>(sum[c] / count);
  }
}

void l2_normalize(std::span<const float> x, std::size_t columns, std::span<float> y) {
  assert(columns > 0 && x.size() % columns == 0 && y.size() == x.size());
  for (std::size_t r = 0; r < x.size() / columns; ++r) {
    double squares = 0.0;
    for (std::size_t c = 0; c < columns; ++c)
      squares += static_cast<double>(x[r * columns + c]) * x[r * columns + c];
    const double scale = 1.0 / std::max(std::sqrt(squares), 1e-12);
    for (std::size_t c = 0; c < columns; ++c)
      y[r * columns + c] = static_cast<float>(x[r * columns + c] * scale);
  }
}

}  // namespace s1::backend::cpu::reference
