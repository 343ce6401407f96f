#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

namespace s1::backend::cpu {

// Our kernels and oneDNN (Debian builds it on OpenMP) share one OpenMP thread pool, so the cores are
// never oversubscribed by two pools spinning against each other.

// Sets how many threads every later parallel region uses, ours and oneDNN's. OpenMP keeps this
// setting per calling thread, so each kernel entry point re-applies it on the thread that calls it.
void set_thread_count(int count);
[[nodiscard]] int thread_count();

// Makes the calling thread's next OpenMP regions (ours and oneDNN's) use thread_count() threads.
void apply_thread_count();

// A non-owning reference to a callable, so parallel_for needs no allocation or template in callers.
template <class Signature>
class FunctionRef;

template <class Result, class... Args>
class FunctionRef<Result(Args...)> {
 public:
  template <class Callable>
    requires(!std::is_same_v<std::remove_cvref_t<Callable>, FunctionRef> &&
             std::is_invocable_r_v<Result, Callable&, Args...>)
  FunctionRef(Callable&& callable)  // NOLINT(google-explicit-constructor): used like a lambda
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(callable)))),
        call_([](void* object, Args... args) -> Result {
          return (*static_cast<std::remove_reference_t<Callable>*>(object))(std::forward<Args>(args)...);
        }) {}

  Result operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  Result (*call_)(void*, Args...);
};

// Runs body(begin, end) over contiguous chunks covering [0, count), one chunk per thread, but never
// chunks smaller than min_chunk items: waking a second thread costs microseconds, more than tiny
// pieces of work.
void parallel_for(std::size_t count, std::size_t min_chunk,
                  FunctionRef<void(std::size_t begin, std::size_t end)> body);

}  // namespace s1::backend::cpu
