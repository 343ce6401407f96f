#include "server/log_sink.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

namespace s1::server {
namespace {

// About 9,000 access lines: a third of a second of the router's peak rate on 2 cores.
constexpr size_t stderr_capacity = size_t{1} << 20;
constexpr std::chrono::milliseconds stderr_window{10};

std::weak_ptr<GatheringSink> default_sink;

}  // namespace

GatheringSink::GatheringSink(int fd, size_t capacity, std::chrono::milliseconds window)
    : fd_(fd), capacity_(capacity), window_(window) {
  writer_ = std::thread([this] { run(); });
}

GatheringSink::~GatheringSink() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  writer_.join();
}

void GatheringSink::sink_it_(const spdlog::details::log_msg& message) {
  const uint64_t dropped = dropped_.load(std::memory_order_relaxed);
  spdlog::memory_buf_t line;
  if (dropped != reported_drops_) {
    // The reader of the log sees where lines are missing, and how many.
    const std::string notice = std::to_string(dropped - reported_drops_) + " log lines dropped: stderr did not keep up";
    spdlog::details::log_msg dropped_notice(message.time, message.source, message.logger_name, spdlog::level::warn,
                                            notice);
    formatter_->format(dropped_notice, line);
  }
  formatter_->format(message, line);
  if (pending_.size() + line.size() > capacity_) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  reported_drops_ = dropped;
  pending_.append(line.data(), line.size());
  // Only an idle writer is woken (a system call): one that is writing or sleeping out its window
  // takes the line with the others at the window's end.
  if (writer_idle_) {
    writer_idle_ = false;
    wake_.notify_one();
  }
}

void GatheringSink::flush_() {
  std::lock_guard writing(write_mutex_);  // lines the writer took go first
  write_out(pending_);
  pending_.clear();
}

void GatheringSink::run() {
  // The first line after a quiet spell is written at once; then the writer sleeps out the window
  // and writes whatever gathered meanwhile, so a busy server makes one write per window.
  std::unique_lock lock(mutex_);
  while (true) {
    while (!stopping_ && pending_.empty()) {
      writer_idle_ = true;
      wake_.wait(lock);
    }
    writer_idle_ = false;
    std::unique_lock writing(write_mutex_);
    writing_.swap(pending_);
    const bool stop = stopping_;
    lock.unlock();
    write_out(writing_);
    writing_.clear();
    writing.unlock();
    if (stop) return;
    lock.lock();
    wake_.wait_for(lock, window_, [this] { return stopping_; });
  }
}

void GatheringSink::write_out(const std::string& text) const {
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd_, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // a closed or failing stderr: the lines have nowhere to go
    written += static_cast<size_t>(n);
  }
}

uint64_t dropped_log_lines() {
  const std::shared_ptr<GatheringSink> sink = default_sink.lock();
  return sink ? sink->dropped() : 0;
}

void install_default_logger(const std::string& name) {
  if (isatty(STDERR_FILENO)) {
    spdlog::set_default_logger(spdlog::stderr_color_mt(name));
    return;
  }
  auto sink = std::make_shared<GatheringSink>(STDERR_FILENO, stderr_capacity, stderr_window);
  default_sink = sink;
  auto logger = std::make_shared<spdlog::logger>(name, sink);
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace s1::server
