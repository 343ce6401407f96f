#include "router/socket_io.h"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/version.hpp>

#include <cstddef>
#include <new>

#if BOOST_VERSION / 100 == 1074
#include <boost/asio/detail/bind_handler.hpp>
#include <boost/asio/detail/fenced_block.hpp>
#include <boost/asio/detail/handler_alloc_helpers.hpp>
#include <boost/asio/detail/handler_cont_helpers.hpp>
#include <boost/asio/detail/handler_work.hpp>
#include <boost/asio/detail/reactor.hpp>
#include <boost/asio/detail/reactor_op.hpp>
#include <boost/asio/detail/socket_ops.hpp>
#if defined(BOOST_ASIO_HAS_EPOLL)
#include <sys/epoll.h>
#endif
#endif

#include <atomic>

namespace s1::router {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

asio::execution_context::id DeadlineWatch::id;

namespace {
std::atomic<uint64_t> watches_ended{0};
}  // namespace

DeadlineWatch::DeadlineWatch(asio::execution_context& context) : asio::execution_context::service(context) {}

DeadlineWatch::~DeadlineWatch() { watches_ended.fetch_add(1, std::memory_order_release); }

DeadlineWatch& DeadlineWatch::of(const asio::any_io_executor& executor) {
  // use_service locks the context's service registry each time: the watch this thread last asked
  // for is remembered, until any watch ends (a later context at the same address has its own).
  thread_local const asio::execution_context* last_context = nullptr;
  thread_local DeadlineWatch* last_watch = nullptr;
  thread_local uint64_t last_ended = 0;
  asio::execution_context& context = asio::query(executor, asio::execution::context);
  const uint64_t ended = watches_ended.load(std::memory_order_acquire);
  if (&context != last_context || ended != last_ended) {
    last_watch = &asio::use_service<DeadlineWatch>(context);
    last_context = &context;
    last_ended = ended;
  }
  return *last_watch;
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
  scope.previous_ = last_;
  scope.next_ = nullptr;
  (last_ != nullptr ? last_->next_ : first_) = &scope;
  last_ = &scope;
  scope.linked_ = true;
  // The timer is armed no later than every linked deadline: only an earlier one moves it.
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
  std::optional<Clock::time_point> earliest;
  for (Scope* scope = first_; scope != nullptr;) {
    Scope& visited = *scope;
    scope = visited.next_;
    if (visited.deadline_ > now) {
      if (!earliest || visited.deadline_ < *earliest) earliest = visited.deadline_;
      continue;
    }
    unlink(visited);
    visited.expired_ = true;
    error_code ignored;
    visited.socket_.cancel(ignored);  // the aborted operations complete later, through the loop
  }
  if (earliest) arm(*earliest);
}

namespace {

bool would_block(const error_code& error) {
  return error == asio::error::would_block || error == asio::error::try_again;
}

#if BOOST_VERSION / 100 == 1074
// Asio 1.18's socket read tries the system call before it waits, always: where the caller knows
// that nothing can have arrived yet, that try is a read that finds nothing (measured: one per
// forwarded request). This is Asio's receive operation, except that when asked it declines the
// try its start makes and so waits for epoll's next event from the start. Asio registers every
// socket edge-triggered when it opens it, and an edge is only consumed by the event loop's
// epoll_wait: bytes, an end or an error that reach the socket after the caller last saw it empty
// raise an edge the loop has yet to report, which then performs this operation's read.
thread_local const void* declined_try = nullptr;  // the operation whose start is under way

template <typename Handler, typename IoExecutor>
class ReceiveAfterEvent : public asio::detail::reactor_op {
 public:
  BOOST_ASIO_DEFINE_HANDLER_PTR(ReceiveAfterEvent);

  ReceiveAfterEvent(asio::detail::socket_type socket, asio::mutable_buffer buffer, Handler& handler,
                    const IoExecutor& io_executor, bool* performed)
      : reactor_op(error_code(), &ReceiveAfterEvent::perform_receive, &ReceiveAfterEvent::complete_receive),
        socket_(socket),
        buffer_(buffer),
        performed_(performed),
        handler_(std::move(handler)),
        work_(handler_, io_executor) {}

 private:
  static status perform_receive(reactor_op* base) {
    auto* self = static_cast<ReceiveAfterEvent*>(base);
    if (self == declined_try) return not_done;
    const bool finished = asio::detail::socket_ops::non_blocking_recv1(
        self->socket_, self->buffer_.data(), self->buffer_.size(), 0, true, self->ec_, self->bytes_transferred_);
    if (!finished) return not_done;
    // Known from here on, before the completion runs (it queues behind other handlers).
    if (self->performed_ != nullptr) *self->performed_ = true;
    // As Asio's: only the stream's end tells that a read would find nothing more.
    return self->ec_ == asio::error::eof ? done_and_exhausted : done;
  }

  // As Asio's reactive_socket_recv_op::do_complete.
  static void complete_receive(void* owner, asio::detail::operation* base, const error_code&, size_t) {
    auto* self = static_cast<ReceiveAfterEvent*>(base);
    ptr owned = {asio::detail::addressof(self->handler_), self, self};
    asio::detail::handler_work<Handler, IoExecutor> work(std::move(self->work_));
    // The handler is moved out before the operation's memory is freed: it may own that memory.
    asio::detail::binder2<Handler, error_code, size_t> bound(self->handler_, self->ec_, self->bytes_transferred_);
    owned.h = asio::detail::addressof(bound.handler_);
    owned.reset();
    if (owner) {
      asio::detail::fenced_block fence(asio::detail::fenced_block::half);
      work.complete(bound, bound.handler_);
    }
  }

  asio::detail::socket_type socket_;
  asio::mutable_buffer buffer_;
  bool* performed_;  // set when the system call completed; the handler keeps it alive
  Handler handler_;
  asio::detail::handler_work<Handler, IoExecutor> work_;
};

// The socket's reactor registration, which tcp::socket keeps protected.
struct SocketInternals : tcp::socket {
  static auto& of(tcp::socket& socket) { return (socket.*(&SocketInternals::impl_)).get_implementation(); }
};

#if defined(BOOST_ASIO_HAS_EPOLL)
// What Asio keeps private and report_peer_end needs: the reactor's epoll descriptor, the events a
// socket is registered for, and the events epoll last reported for it (stored where the event loop
// passes them to the socket's operations). An explicit instantiation may name a private member;
// the friend function it defines hands the member's address out.
template <typename Tag, typename Tag::type member>
struct ExposeMember {
  friend typename Tag::type exposed(Tag) { return member; }
};
struct EpollDescriptor {
  using type = int asio::detail::epoll_reactor::*;
  friend type exposed(EpollDescriptor);
};
struct RegisteredEvents {
  using type = uint32_t asio::detail::epoll_reactor::descriptor_state::*;
  friend type exposed(RegisteredEvents);
};
struct ReportedEvents {
  using type = unsigned int asio::detail::scheduler_operation::*;
  friend type exposed(ReportedEvents);
};
template struct ExposeMember<EpollDescriptor, &asio::detail::epoll_reactor::epoll_fd_>;
template struct ExposeMember<RegisteredEvents, &asio::detail::epoll_reactor::descriptor_state::registered_events_>;
template struct ExposeMember<ReportedEvents, &asio::detail::scheduler_operation::task_result_>;

// A socket's epoll state is its reactor registration, an operation the event loop queues with the
// events epoll reported (a private base: the cast names it regardless).
unsigned int reported_events(asio::detail::epoll_reactor::descriptor_state* state) {
  return ((asio::detail::scheduler_operation*)state)->*exposed(ReportedEvents{});  // NOLINT: private base
}
#endif

struct InitiateReceiveAfterEvent {
  template <typename Handler>
  void operator()(Handler&& handler, tcp::socket* socket, asio::mutable_buffer buffer, FirstRead first,
                  bool* performed) const {
    using Operation = ReceiveAfterEvent<std::decay_t<Handler>, asio::any_io_executor>;
    auto& implementation = SocketInternals::of(*socket);
    const bool is_continuation = boost_asio_handler_cont_helpers::is_continuation(handler);
    typename Operation::ptr owned = {asio::detail::addressof(handler), Operation::ptr::allocate(handler), nullptr};
    owned.p = new (owned.v) Operation(implementation.socket_, buffer, handler, socket->get_executor(), performed);
    auto& reactor = asio::use_service<asio::detail::reactor>(asio::query(socket->get_executor(), asio::execution::context));
    // A read on a socket in blocking mode would block the thread: Asio's own start_op check.
    if ((implementation.state_ & asio::detail::socket_ops::non_blocking) == 0 &&
        !asio::detail::socket_ops::set_internal_non_blocking(implementation.socket_, implementation.state_, true,
                                                             owned.p->ec_)) {
      reactor.post_immediate_completion(owned.p, is_continuation);
    } else {
      // The reactor tries the operation at once (under its lock, on this thread) when epoll left
      // the socket marked readable; declined, it queues the operation without an epoll_ctl.
      declined_try = first == FirstRead::after_event ? owned.p : nullptr;
      reactor.start_op(asio::detail::reactor::read_op, implementation.socket_, implementation.reactor_data_, owned.p,
                       is_continuation, true);
      declined_try = nullptr;
    }
    owned.v = owned.p = nullptr;
  }
};

// `performed`, when given, is set as soon as the receive's system call completes.
template <typename Token>
auto async_receive(tcp::socket& socket, asio::mutable_buffer buffer, FirstRead first, Token&& token,
                   bool* performed = nullptr) {
  return asio::async_initiate<Token, void(error_code, size_t)>(InitiateReceiveAfterEvent{}, token, &socket, buffer,
                                                                first, performed);
}
#else
// Other Boost versions: Asio's own read, which tries the system call first; `performed` is set when
// the completion runs.
template <typename Token>
auto async_receive(tcp::socket& socket, asio::mutable_buffer buffer, FirstRead, Token&& token, bool* = nullptr) {
  return socket.async_read_some(buffer, std::forward<Token>(token));
}
#endif

}  // namespace

bool report_peer_end(tcp::socket& socket) {
#if BOOST_VERSION / 100 == 1074 && defined(BOOST_ASIO_HAS_EPOLL)
  auto& implementation = SocketInternals::of(socket);
  asio::detail::epoll_reactor::descriptor_state* state = implementation.reactor_data_;
  if (state == nullptr) return false;
  uint32_t& registered = state->*exposed(RegisteredEvents{});
  if (registered == 0) return false;
  auto& reactor = asio::use_service<asio::detail::reactor>(asio::query(socket.get_executor(), asio::execution::context));
  // Asio rewrites the registration from `registered` (adding EPOLLOUT when a write must wait): the
  // end stays asked for. Only this socket's thread touches its registration.
  epoll_event event{};
  event.events = registered | EPOLLRDHUP;
  event.data.ptr = state;
  if (::epoll_ctl(reactor.*exposed(EpollDescriptor{}), EPOLL_CTL_MOD, implementation.socket_, &event) != 0) return false;
  registered = event.events;
  return true;
#else
  (void)socket;
  return false;
#endif
}

bool peer_end_reported(tcp::socket& socket) {
#if BOOST_VERSION / 100 == 1074 && defined(BOOST_ASIO_HAS_EPOLL)
  asio::detail::epoll_reactor::descriptor_state* state = SocketInternals::of(socket).reactor_data_;
  return state != nullptr && (reported_events(state) & EPOLLRDHUP) != 0;
#else
  (void)socket;
  return false;
#endif
}

std::optional<error_code> write_now(tcp::socket& socket, std::array<asio::const_buffer, 2>& buffers) {
  error_code error;
  size_t written = socket.write_some(buffers, error);
  for (asio::const_buffer& buffer : buffers) {
    const size_t taken = std::min(written, buffer.size());
    buffer += taken;
    written -= taken;
  }
  if (buffers[0].size() == 0 && buffers[1].size() == 0) return error_code{};
  if (error && !would_block(error)) return error;
  return std::nullopt;
}

std::optional<error_code> read_now(tcp::socket& socket, boost::beast::flat_buffer& buffer, size_t most) {
  if (!socket.non_blocking()) return std::nullopt;
  error_code error;
  const size_t received = socket.read_some(buffer.prepare(most), error);
  if (!error) buffer.commit(received);
  if (would_block(error)) return std::nullopt;
  return error;
}

asio::awaitable<error_code> write_all(tcp::socket& socket, std::array<asio::const_buffer, 2> buffers,
                                      Clock::time_point deadline) {
  std::optional<DeadlineWatch::Scope> scope;
  while (true) {
    if (const auto done = write_now(socket, buffers)) co_return *done;
    // Partly written or would block: the socket's send buffer is full until the peer reads.
    if (!scope) scope.emplace(DeadlineWatch::of(socket.get_executor()), socket, deadline);
    error_code error;
    co_await socket.async_wait(tcp::socket::wait_write, asio::redirect_error(asio::use_awaitable, error));
    if (scope->expired()) co_return boost::beast::error::timeout;
    if (error) co_return error;
  }
}

asio::awaitable<error_code> read_some(tcp::socket& socket, boost::beast::flat_buffer& buffer, size_t most,
                                      Clock::time_point deadline, FirstRead first) {
  if (first == FirstRead::at_once && socket.non_blocking()) {
    // Tried here rather than by Asio's read, whose completion, even an immediate one, is posted
    // through the event loop (an epoll_wait trip each).
    if (const auto done = read_now(socket, buffer, most)) co_return *done;
    // Seen empty and open just now, and the loop has not run since: the wait needs no second try.
    first = FirstRead::after_event;
  }
  // When it would block, the read queues without re-registering the socket (a readiness wait
  // costs an epoll_ctl each time).
  DeadlineWatch::Scope scope(DeadlineWatch::of(socket.get_executor()), socket, deadline);
  error_code error;
  const size_t received =
      first == FirstRead::after_event
          ? co_await async_receive(socket, buffer.prepare(most), first, asio::redirect_error(asio::use_awaitable, error))
          : co_await socket.async_read_some(buffer.prepare(most), asio::redirect_error(asio::use_awaitable, error));
  if (scope.expired()) co_return boost::beast::error::timeout;
  if (!error) buffer.commit(received);
  co_return error;
}

// The receive's outcome and its waiter, shared with the receive's completion handler: a connection
// may be destroyed while its receive is pending (closing the socket aborts the receive, whose
// completion runs later) and must not be reached from it then.
struct PendingReceive::State {
  using Waiter = asio::async_result<asio::use_awaitable_t<>, void()>::handler_type;
  bool performed = false;  // the system call completed
  bool completed = false;  // the completion ran
  error_code error;
  size_t bytes = 0;
  std::optional<Waiter> waiter;

  // The receive operation's memory. One receive at a time, and Asio frees an operation before its
  // completion runs: one block serves them all. (Asio 1.74 recycles one block per thread, which
  // the other receive pending on that thread holds: a malloc per receive otherwise.)
  static constexpr size_t operation_size = 256;
  alignas(std::max_align_t) std::array<std::byte, operation_size> operation;
  bool operation_taken = false;

  void* allocate(size_t size) {
    if (operation_taken || size > operation_size) return ::operator new(size);
    operation_taken = true;
    return operation.data();
  }
  void deallocate(void* pointer) {
    if (pointer == operation.data()) {
      operation_taken = false;
    } else {
      ::operator delete(pointer);
    }
  }
};

namespace {

// Hands Asio the state's block for the receive operation (its associated allocator).
template <typename T>
struct OperationAllocator {
  using value_type = T;
  explicit OperationAllocator(PendingReceive::State* owner) : state(owner) {}
  template <typename U>
  OperationAllocator(const OperationAllocator<U>& other) : state(other.state) {}  // NOLINT: rebinding
  T* allocate(size_t count) { return static_cast<T*>(state->allocate(count * sizeof(T))); }
  void deallocate(T* pointer, size_t) { state->deallocate(pointer); }
  template <typename U>
  bool operator==(const OperationAllocator<U>& other) const { return state == other.state; }
  PendingReceive::State* state;
};

struct ReceiveCompletion {
  using allocator_type = OperationAllocator<void>;
  allocator_type get_allocator() const noexcept { return allocator_type(state.get()); }

  std::shared_ptr<PendingReceive::State> state;
  void operator()(const error_code& error, size_t bytes) const {
    PendingReceive::State& outcome = *state;
    outcome.performed = outcome.completed = true;
    outcome.error = error;
    outcome.bytes = bytes;
    if (!outcome.waiter) return;
    // Resumed last: the coroutine may start the next receive on the same state.
    PendingReceive::State::Waiter waiter = std::move(*outcome.waiter);
    outcome.waiter.reset();
    std::move(waiter)();
  }
};

#if BOOST_VERSION / 100 == 1074
static_assert(sizeof(ReceiveAfterEvent<ReceiveCompletion, asio::any_io_executor>) <= PendingReceive::State::operation_size,
              "the receive operation outgrew the block its state keeps for it");
#endif

}  // namespace

PendingReceive::PendingReceive() : state_(std::make_shared<State>()) {}

PendingReceive::~PendingReceive() = default;

void PendingReceive::start(tcp::socket& socket, boost::beast::flat_buffer& buffer, size_t most, FirstRead first) {
  State& state = *state_;
  state.performed = state.completed = false;
  state.error = {};
  state.bytes = 0;
  async_receive(socket, buffer.prepare(most), first, ReceiveCompletion{state_}, &state.performed);
}

bool PendingReceive::finished() const { return state_->performed; }

bool PendingReceive::completed() const { return state_->completed; }

asio::awaitable<void> PendingReceive::completion() {
  return asio::async_initiate<const asio::use_awaitable_t<>&, void()>(
      [state = state_](State::Waiter waiter) { state->waiter.emplace(std::move(waiter)); }, asio::use_awaitable);
}

error_code PendingReceive::take(boost::beast::flat_buffer& buffer) {
  const State& state = *state_;
  if (!state.error) buffer.commit(state.bytes);
  return state.error;
}

}  // namespace s1::router
