#pragma once

#include <cstddef>
#include <span>

namespace s1::backend::cpu {

// Numerically stable softmax over each row of x, [rows, columns] row-major fp32. y may be x.
void softmax(std::span<const float> x, std::size_t columns, std::span<float> y);

}  // namespace s1::backend::cpu
