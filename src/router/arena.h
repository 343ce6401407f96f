#pragma once
// Storage for what a request allocates and frees before the next one: Beast's parsers keep each
// header field in its own allocation, and with the general-purpose allocator those were most of the
// mallocs on the forwarding path (measured: docs/benchmarks/router.md). An arena per connection
// serves them from one block that is reused once everything taken from it was given back.

#include <cstddef>
#include <memory>

namespace s1::router {

class Arena {
 public:
  explicit Arena(size_t capacity = 8 * 1024);
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // From the block while it has room, else from the heap: never fails for lack of room.
  void* allocate(size_t bytes, size_t alignment);
  void deallocate(void* pointer, size_t bytes, size_t alignment);

  // Allocations from the block not yet given back (tests).
  size_t live() const { return live_; }

 private:
  std::unique_ptr<std::byte[]> block_;
  size_t capacity_;
  size_t used_ = 0;
  size_t live_ = 0;  // the block is reused from its start once this falls to zero
};

// A standard allocator over an Arena; without one (default-constructed), the heap.
template <class T>
class ArenaAllocator {
 public:
  using value_type = T;

  ArenaAllocator() = default;
  explicit ArenaAllocator(Arena& arena) : arena_(&arena) {}
  template <class U>
  ArenaAllocator(const ArenaAllocator<U>& other) : arena_(other.arena()) {}  // NOLINT(google-explicit-constructor)

  T* allocate(size_t count) {
    if (arena_ == nullptr) return std::allocator<T>().allocate(count);
    return static_cast<T*>(arena_->allocate(count * sizeof(T), alignof(T)));
  }
  void deallocate(T* pointer, size_t count) {
    if (arena_ == nullptr) return std::allocator<T>().deallocate(pointer, count);
    arena_->deallocate(pointer, count * sizeof(T), alignof(T));
  }

  Arena* arena() const { return arena_; }
  template <class U>
  bool operator==(const ArenaAllocator<U>& other) const {
    return arena_ == other.arena();
  }

 private:
  Arena* arena_ = nullptr;
};

}  // namespace s1::router
