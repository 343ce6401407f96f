#pragma once
// What the embedding contracts share: a bounded LRU of candidate vectors keyed by the exact text
// they were computed from, and the cosine of two unit vectors as their references compute it.

#include <cstddef>
#include <list>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace s1::decide {

// A least-recently-used map from exact text to embedding with a fixed number of entries.
// Capacity 0 caches nothing. Not thread-safe: the engine's executor thread owns it.
class EmbeddingCache {
 public:
  explicit EmbeddingCache(size_t capacity) : capacity_(capacity) {}
  EmbeddingCache(const EmbeddingCache&) = delete;
  EmbeddingCache& operator=(const EmbeddingCache&) = delete;

  // The cached embedding, now the most recently used; nullptr when absent. Valid until the next
  // insert.
  const std::vector<float>* find(std::string_view text);
  // Adds or replaces `text`, then evicts the least recently used entries beyond capacity.
  void insert(std::string text, std::vector<float> embedding);

  size_t size() const { return entries_.size(); }
  size_t capacity() const { return capacity_; }

 private:
  using Entry = std::pair<std::string, std::vector<float>>;
  size_t capacity_;
  std::list<Entry> entries_;  // most recently used first; nodes never move, so keys stay valid
  std::unordered_map<std::string_view, std::list<Entry>::iterator> index_;
};

// Σ aᵢ·bᵢ over fp32 components with the products and the sum in float64, left to right: the cosine
// of two unit vectors. The spans must have equal length.
double unit_vector_dot(std::span<const float> a, std::span<const float> b);

}  // namespace s1::decide
