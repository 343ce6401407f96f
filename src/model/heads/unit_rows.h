#pragma once

#include <cstddef>
#include <span>

namespace s1::heads {

// Scales each row of `rows` ([n, width] row-major) to unit L2 length, summing in double; an all-zero
// row stays zero (no direction to keep).
void l2_normalize_rows(std::span<float> rows, std::size_t width);

}  // namespace s1::heads
