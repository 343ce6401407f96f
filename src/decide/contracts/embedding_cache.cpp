#include "decide/contracts/embedding_cache.h"

#include <cmath>

namespace s1::decide {

const std::vector<float>* EmbeddingCache::find(std::string_view text) {
  const auto found = index_.find(text);
  if (found == index_.end()) return nullptr;
  entries_.splice(entries_.begin(), entries_, found->second);
  return &found->second->second;
}

void EmbeddingCache::insert(std::string text, std::vector<float> embedding) {
  if (capacity_ == 0) return;
  if (const auto found = index_.find(text); found != index_.end()) {
    found->second->second = std::move(embedding);
    entries_.splice(entries_.begin(), entries_, found->second);
    return;
  }
  entries_.emplace_front(std::move(text), std::move(embedding));
  index_.emplace(entries_.front().first, entries_.begin());
  while (entries_.size() > capacity_) {
    index_.erase(entries_.back().first);
    entries_.pop_back();
  }
}

double unit_vector_dot(std::span<const float> a, std::span<const float> b) {
  double sum = 0.0;
  for (size_t i = 0; i < a.size(); ++i) sum += static_cast<double>(a[i]) * static_cast<double>(b[i]);
  return sum;
}

void l2_normalize_rows(std::span<float> rows, size_t width) {
  for (size_t start = 0; start + width <= rows.size(); start += width) {
    const std::span<float> row = rows.subspan(start, width);
    double squares = 0.0;
    for (const float value : row) squares += static_cast<double>(value) * static_cast<double>(value);
    if (squares == 0.0) continue;
    const double scale = 1.0 / std::sqrt(squares);
    for (float& value : row) value = static_cast<float>(value * scale);
  }
}

}  // namespace s1::decide
