#pragma once
// Log lines for a file descriptor (stderr) gathered and written by a thread of their own: a thread
// that logs (an HTTP I/O thread writing its access line per request) only formats into a buffer,
// and one write system call carries every line of a short window. Written at once, each access line
// cost the router a write per request and, at concurrency 32, 0.75 futex calls on the sink's mutex,
// which both I/O threads held across that write (docs/benchmarks/router.md).

#include <spdlog/sinks/base_sink.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace s1::server {

class GatheringSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  // The first line after a quiet spell is written at once, the lines after it at most `window`
  // after the last write, together; at most `capacity` bytes wait, and a line
  // that would exceed it is dropped and counted, so a logging thread never blocks on a slow reader
  // of `fd`. flush() (spdlog's flush_on level, exit) writes everything at once, in order.
  GatheringSink(int fd, size_t capacity, std::chrono::milliseconds window);
  // Writes what is still waiting.
  ~GatheringSink() override;
  GatheringSink(const GatheringSink&) = delete;
  GatheringSink& operator=(const GatheringSink&) = delete;

  // Lines dropped since the start because `capacity` bytes were already waiting.
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 protected:
  void sink_it_(const spdlog::details::log_msg& message) override;
  void flush_() override;

 private:
  void run();
  void write_out(const std::string& text) const;

  const int fd_;
  const size_t capacity_;
  const std::chrono::milliseconds window_;
  std::string pending_;  // lines not yet handed to the writer, under mutex_
  std::string writing_;  // lines the writer writes now, under write_mutex_
  // Held while writing; taken after mutex_, so lines leave in the order they came.
  std::mutex write_mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool writer_idle_ = false;     // the writer waits for a line, under mutex_
  uint64_t reported_drops_ = 0;  // under mutex_
  std::atomic<uint64_t> dropped_{0};
  std::thread writer_;
};

// The lines dropped by the default logger's GatheringSink (0 when it has none).
uint64_t dropped_log_lines();

// Makes the default logger, named `name`, write through a GatheringSink on stderr when stderr is
// not a terminal (a terminal keeps coloured lines written at once). Warnings and errors are
// written at once, with every line before them.
void install_default_logger(const std::string& name);

}  // namespace s1::server
