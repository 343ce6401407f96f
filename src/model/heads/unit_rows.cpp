#include "model/heads/unit_rows.h"

#include <cmath>

namespace s1::heads {

void l2_normalize_rows(std::span<float> rows, std::size_t width) {
  for (std::size_t start = 0; start + width <= rows.size(); start += width) {
    const std::span<float> row = rows.subspan(start, width);
    double squares = 0.0;
    for (const float value : row) squares += static_cast<double>(value) * static_cast<double>(value);
    if (squares == 0.0) continue;
    const double scale = 1.0 / std::sqrt(squares);
    for (float& value : row) value = static_cast<float>(value * scale);
  }
}

}  // namespace s1::heads
