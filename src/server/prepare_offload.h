#pragma once
// Request work moved off the HTTP I/O threads onto the bounded prepare pool, and the refusal when
// the pool is full.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include "api/errors.h"
#include "runtime/prepare_pool.h"

namespace s1::server {

// Runs `work` on `pool` and resumes on the awaiting coroutine's executor with its result; nullopt
// when the pool refused it (full).
template <typename Result>
boost::asio::awaitable<std::optional<Result>> on_pool(runtime::PreparePool& pool, runtime::PreparePool::Size size,
                                                      std::function<Result()> work) {
  const boost::asio::any_io_executor executor = co_await boost::asio::this_coro::executor;
  // Named, not a temporary in the co_await expression: GCC 12 destroys such temporaries twice (met
  // here as a crash on a connection's next request).
  auto initiation = [&pool, size, &work, executor](auto handler) {
    // Shared: the pool's tasks are copyable, the coroutine's completion handler is not.
    auto resume = std::make_shared<decltype(handler)>(std::move(handler));
    auto deliver = [resume, executor](std::optional<Result> result) {
      boost::asio::post(executor,
                        [resume, result = std::move(result)]() mutable { std::move (*resume)(std::move(result)); });
    };
    if (!pool.submit([work = std::move(work), deliver] { deliver(work()); }, size)) deliver(std::nullopt);
  };
  co_return co_await boost::asio::async_initiate<const boost::asio::use_awaitable_t<>&, void(std::optional<Result>)>(
      initiation, boost::asio::use_awaitable);
}

inline api::ApiError preparing_overloaded() {
  return api::ApiError::make(api::ErrorCode::overloaded, "Too many requests being prepared; retry shortly");
}

}  // namespace s1::server
