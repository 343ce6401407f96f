#pragma once
// Socket I/O on the forwarding path that tries the system call first and waits for readiness only
// when it would block. Asio's own operations post even an immediate completion through the event
// loop's queue (one more epoll_wait trip each), and Beast's timed stream arms a timer per
// operation; here an operation that can complete at once costs one system call, and a wait costs
// no timer (DeadlineWatch). The sockets must be in non-blocking mode (socket.non_blocking(true)).

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio/awaitable.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include <array>
#include <chrono>
#include <memory>
#include <optional>

namespace s1::router {

using Clock = std::chrono::steady_clock;

// Deadlines for socket waits without a timer per wait: one timer per I/O context, armed no later
// than the earliest deadline, cancels the pending operations of the sockets whose deadline passed.
// Used only from the thread running its context.
class DeadlineWatch : public boost::asio::execution_context::service {
 public:
  static boost::asio::execution_context::id id;
  explicit DeadlineWatch(boost::asio::execution_context& context);
  ~DeadlineWatch() override;

  // The watch of the context that `executor` runs on.
  static DeadlineWatch& of(const boost::asio::any_io_executor& executor);

  // While alive, cancels `socket`'s pending operations once `deadline` passes.
  class Scope {
   public:
    Scope(DeadlineWatch& watch, boost::asio::ip::tcp::socket& socket, Clock::time_point deadline);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    bool expired() const { return expired_; }

   private:
    friend class DeadlineWatch;
    DeadlineWatch& watch_;
    boost::asio::ip::tcp::socket& socket_;
    Clock::time_point deadline_;
    bool expired_ = false;
    bool linked_ = false;
    Scope* previous_ = nullptr;
    Scope* next_ = nullptr;
  };

 private:
  void shutdown() override;
  void link(Scope& scope);
  void unlink(Scope& scope);
  void arm(Clock::time_point at);
  void expire_due();

  std::optional<boost::asio::steady_timer> timer_;
  bool armed_ = false;
  Clock::time_point armed_for_{};
  // In no order: a wait's scope is linked and unlinked in constant time, and only the timer's
  // expiry, once per passed deadline it was armed for, walks them. (Kept in deadline order, a
  // request's wait was placed behind every idle connection's later deadline: a walk per wait.)
  Scope* first_ = nullptr;
  Scope* last_ = nullptr;
};

// Writes what the socket takes at once of `buffers`, advancing them past it: the outcome when every
// byte was written or the write failed, nullopt when the rest must wait (write_all). A plain call:
// a write that completes at once costs no coroutine frame (a malloc each in Asio 1.74).
std::optional<boost::system::error_code> write_now(boost::asio::ip::tcp::socket& socket,
                                                   std::array<boost::asio::const_buffer, 2>& buffers);

// Appends to `buffer` what the socket has at once, at most `most` bytes: the outcome (asio's eof
// when the peer closed), or nullopt when nothing is there yet or the socket is in blocking mode
// (nothing tried). A plain call, as write_now: no coroutine frame.
std::optional<boost::system::error_code> read_now(boost::asio::ip::tcp::socket& socket,
                                                  boost::beast::flat_buffer& buffer, size_t most);

// Writes every byte of `buffers`; beast::error::timeout when `deadline` passes first.
boost::asio::awaitable<boost::system::error_code> write_all(boost::asio::ip::tcp::socket& socket,
                                                            std::array<boost::asio::const_buffer, 2> buffers,
                                                            Clock::time_point deadline);

enum class FirstRead {
  // Read at once (on a non-blocking socket, without a trip through the event loop when something
  // is there), then, if nothing was, wait for epoll's next event.
  at_once,
  // Wait for epoll's next event, then read: no read that finds nothing. Only when nothing can be in
  // the socket that epoll has already reported: the caller saw the socket empty and open (a read
  // that would block; or one that got fewer bytes than it asked, with no end in the events epoll
  // reported, see peer_end_reported), and this thread's event loop has not run since.
  after_event,
};

// Appends what the socket has, at most `most` bytes, to `buffer`, waiting until something arrives;
// asio's eof when the peer closed, beast::error::timeout when `deadline` passes first.
boost::asio::awaitable<boost::system::error_code> read_some(boost::asio::ip::tcp::socket& socket,
                                                            boost::beast::flat_buffer& buffer, size_t most,
                                                            Clock::time_point deadline,
                                                            FirstRead first = FirstRead::at_once);

// Asks epoll to report the peer's end of `socket` (EPOLLRDHUP) along with its other events: true
// when it will, which only Asio 1.18 (Boost 1.74) on epoll lets the router ask; false otherwise.
bool report_peer_end(boost::asio::ip::tcp::socket& socket);

// Whether the events epoll last reported for `socket` included the peer's end: an end that arrived
// together with the bytes last read, which those reads cannot tell (report_peer_end first). Asio
// reuses registrations: until the socket's first event this may tell of an earlier socket's end,
// so ask only once an event has delivered bytes (an end then only keeps a connection from reuse).
bool peer_end_reported(boost::asio::ip::tcp::socket& socket);

// A receive kept pending on a connection between its uses: what happens to an idle connection (the
// peer closing it, bytes it should not have sent) is learnt from epoll's events instead of a system
// call before each use, and the next reply's first read is already waiting when the reply arrives.
// One receive at a time; used only from the thread running the socket's context.
class PendingReceive {
 public:
  PendingReceive();
  ~PendingReceive();
  PendingReceive(const PendingReceive&) = delete;
  PendingReceive& operator=(const PendingReceive&) = delete;

  // Starts a receive of at most `most` bytes into `buffer`, which must be left alone until wait()
  // returns. `first` as for read_some (FirstRead::after_event says when).
  void start(boost::asio::ip::tcp::socket& socket, boost::beast::flat_buffer& buffer, size_t most, FirstRead first);
  // The started receive's system call has completed (bytes, the end, an error or a cancellation),
  // as far as this thread's event loop has been told.
  bool finished() const;
  // Its completion has run: take() has the outcome.
  bool completed() const;
  // Resumes the awaiting coroutine once the completion has run; only while !completed(). Not a
  // coroutine itself (a frame is a malloc in Asio 1.74): the caller watches the deadline around it
  // (a DeadlineWatch::Scope, whose expiry cancels the receive).
  boost::asio::awaitable<void> completion();
  // Appends the completed receive's bytes to `buffer`: its outcome, errors as read_some's.
  boost::system::error_code take(boost::beast::flat_buffer& buffer);

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace s1::router
