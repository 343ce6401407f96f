#include "decide/contracts/embedding_cache.h"

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

}  // namespace s1::decide
