#include "router/socket_io.h"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>

namespace s1::router {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

asio::execution_context::id DeadlineWatch::id;

DeadlineWatch::DeadlineWatch(asio::execution_context& context) : asio::execution_context::service(context) {}

DeadlineWatch& DeadlineWatch::of(const asio::any_io_executor& executor) {
  return asio::use_service<DeadlineWatch>(asio::query(executor, asio::execution::context));
}

void DeadlineWatch::shutdown() {
  // The timer goes while the timer service still exists; scopes unlink themselves as their
  // coroutines are destroyed.
  timer_.reset();
  armed_ = false;
}

DeadlineWatch::Scope::Scope(DeadlineWatch& watch, tcp::socket& socket, Clock::time_point deadline)
    : watch_(watch), socket_(socket), deadline_(deadline) {
  if (!watch_.timer_) watch_.timer_.emplace(socket.get_executor());
  watch_.link(*this);
}

DeadlineWatch::Scope::~Scope() {
  if (linked_) watch_.unlink(*this);
}

void DeadlineWatch::link(Scope& scope) {
  // Deadlines mostly grow with time: the place is found from the back.
  Scope* before = last_;
  while (before != nullptr && before->deadline_ > scope.deadline_) before = before->previous_;
  scope.previous_ = before;
  scope.next_ = before != nullptr ? before->next_ : first_;
  (scope.next_ != nullptr ? scope.next_->previous_ : last_) = &scope;
  (before != nullptr ? before->next_ : first_) = &scope;
  scope.linked_ = true;
  if (!armed_ || scope.deadline_ < armed_for_) arm(scope.deadline_);
}

void DeadlineWatch::unlink(Scope& scope) {
  (scope.previous_ != nullptr ? scope.previous_->next_ : first_) = scope.next_;
  (scope.next_ != nullptr ? scope.next_->previous_ : last_) = scope.previous_;
  scope.previous_ = scope.next_ = nullptr;
  scope.linked_ = false;
}

void DeadlineWatch::arm(Clock::time_point at) {
  if (!timer_) return;  // shut down
  armed_ = true;
  armed_for_ = at;
  timer_->expires_at(at);  // a wait armed for later completes as aborted
  timer_->async_wait([this](const error_code& error) {
    if (error == asio::error::operation_aborted) return;
    expire_due();
  });
}

void DeadlineWatch::expire_due() {
  armed_ = false;
  const Clock::time_point now = Clock::now();
  while (first_ != nullptr && first_->deadline_ <= now) {
    Scope& due = *first_;
    unlink(due);
    due.expired_ = true;
    error_code ignored;
    due.socket_.cancel(ignored);
  }
  if (first_ != nullptr) arm(first_->deadline_);
}

namespace {

bool would_block(const error_code& error) {
  return error == asio::error::would_block || error == asio::error::try_again;
}

}  // namespace

asio::awaitable<error_code> write_all(tcp::socket& socket, std::array<asio::const_buffer, 2> buffers,
                                      Clock::time_point deadline) {
  std::optional<DeadlineWatch::Scope> scope;
  while (true) {
    error_code error;
    size_t written = socket.write_some(buffers, error);
    for (asio::const_buffer& buffer : buffers) {
      const size_t taken = std::min(written, buffer.size());
      buffer += taken;
      written -= taken;
    }
    if (buffers[0].size() == 0 && buffers[1].size() == 0) co_return error_code{};
    if (error && !would_block(error)) co_return error;
    if (error) {
      if (!scope) scope.emplace(DeadlineWatch::of(socket.get_executor()), socket, deadline);
      co_await socket.async_wait(tcp::socket::wait_write, asio::redirect_error(asio::use_awaitable, error));
      if (scope->expired()) co_return boost::beast::error::timeout;
      if (error) co_return error;
    }
  }
}

asio::awaitable<error_code> read_some(tcp::socket& socket, boost::beast::flat_buffer& buffer, size_t most,
                                      Clock::time_point deadline) {
  // Asio's read tries the system call first too, and when it would block queues without
  // re-registering the socket (a readiness wait costs an epoll_ctl each time).
  DeadlineWatch::Scope scope(DeadlineWatch::of(socket.get_executor()), socket, deadline);
  error_code error;
  const size_t received =
      co_await socket.async_read_some(buffer.prepare(most), asio::redirect_error(asio::use_awaitable, error));
  if (scope.expired()) co_return boost::beast::error::timeout;
  if (!error) buffer.commit(received);
  co_return error;
}

}  // namespace s1::router
