#include "router/arena.h"

#include <new>

namespace s1::router {

Arena::Arena(size_t capacity) : block_(std::make_unique<std::byte[]>(capacity)), capacity_(capacity) {}

void* Arena::allocate(size_t bytes, size_t alignment) {
  if (alignment <= alignof(std::max_align_t)) {
    const size_t start = (used_ + alignment - 1) & ~(alignment - 1);
    if (start <= capacity_ && bytes <= capacity_ - start) {
      used_ = start + bytes;
      ++live_;
      return block_.get() + start;
    }
  }
  return ::operator new(bytes, std::align_val_t(alignment));
}

void Arena::deallocate(void* pointer, size_t bytes, size_t alignment) {
  const auto* at = static_cast<const std::byte*>(pointer);
  if (at >= block_.get() && at < block_.get() + capacity_) {
    if (--live_ == 0) used_ = 0;
    return;
  }
  ::operator delete(pointer, bytes, std::align_val_t(alignment));
}

}  // namespace s1::router
