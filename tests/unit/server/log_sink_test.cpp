#include "server/log_sink.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <spdlog/logger.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <regex>
#include <string>
#include <thread>

namespace s1::server {
namespace {

using namespace std::chrono_literals;

struct Pipe {
  int read_end = -1;
  int write_end = -1;
  Pipe() {
    int ends[2];
    EXPECT_EQ(pipe2(ends, O_CLOEXEC), 0);
    read_end = ends[0];
    write_end = ends[1];
  }
  ~Pipe() {
    close_writer();
    if (read_end >= 0) close(read_end);
  }
  void close_writer() {
    if (write_end >= 0) close(write_end);
    write_end = -1;
  }
  // What the pipe holds after waiting up to `wait` for its first byte.
  std::string available(std::chrono::milliseconds wait) const {
    std::string text;
    pollfd ready{read_end, POLLIN, 0};
    if (poll(&ready, 1, static_cast<int>(wait.count())) <= 0) return text;
    const int flags = fcntl(read_end, F_GETFL);
    fcntl(read_end, F_SETFL, flags | O_NONBLOCK);
    char buffer[4096];
    ssize_t n;
    while ((n = read(read_end, buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<size_t>(n));
    fcntl(read_end, F_SETFL, flags);
    return text;
  }
  std::string until_end() const {
    std::string text;
    char buffer[4096];
    ssize_t n;
    while ((n = read(read_end, buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<size_t>(n));
    return text;
  }
};

std::shared_ptr<spdlog::logger> logger_on(std::shared_ptr<GatheringSink> sink) {
  auto logger = std::make_shared<spdlog::logger>("test", std::move(sink));
  logger->set_pattern("%l %v");
  logger->flush_on(spdlog::level::warn);
  return logger;
}

// A logger on a GatheringSink on a pipe, whose first line was written at once: the writer now
// sleeps out its window.
struct Gathering {
  Pipe pipe;
  std::shared_ptr<GatheringSink> sink;
  std::shared_ptr<spdlog::logger> logger;
  explicit Gathering(std::chrono::milliseconds window)
      : sink(std::make_shared<GatheringSink>(pipe.write_end, 1 << 16, window)), logger(logger_on(sink)) {
    logger->info("first");
    EXPECT_EQ(pipe.available(10s), "info first\n");
  }
  // Destroys the sink and returns what it wrote last.
  std::string finish() {
    logger.reset();
    sink.reset();
    return pipe.available(0ms);
  }
};

TEST(GatheringSink, WritesTheFirstLineAtOnceAndGathersTheNextUntilDestroyed) {
  Gathering log(10min);
  for (int i = 0; i < 3; ++i) log.logger->info("line {}", i);
  EXPECT_EQ(log.pipe.available(200ms), "") << "lines wait for the window";
  EXPECT_EQ(log.finish(), "info line 0\ninfo line 1\ninfo line 2\n");
}

TEST(GatheringSink, AWarningIsWrittenAtOnceAfterTheLinesBeforeIt) {
  Gathering log(10min);
  log.logger->info("second");
  log.logger->warn("third");
  EXPECT_EQ(log.pipe.available(0ms), "info second\nwarning third\n");
  log.logger->info("fourth");
  EXPECT_EQ(log.pipe.available(200ms), "");
  EXPECT_EQ(log.finish(), "info fourth\n");
}

TEST(GatheringSink, WritesWithinTheWindow) {
  Gathering log(5ms);
  log.logger->info("soon");
  EXPECT_EQ(log.pipe.available(10s), "info soon\n");
}

TEST(GatheringSink, DropsAndCountsLinesInsteadOfBlockingOnAStalledReader) {
  Pipe pipe;
  ASSERT_GT(fcntl(pipe.write_end, F_SETPIPE_SZ, 4096), 0);
  auto sink = std::make_shared<GatheringSink>(pipe.write_end, 8192, 1ms);
  auto logger = logger_on(sink);
  constexpr int lines = 2000;
  const std::string padding(90, 'x');
  const auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < lines; ++i) logger->info("line {} {}", i, padding);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s) << "logging waited for the reader";
  EXPECT_GT(sink->dropped(), 0u);
  std::string text;
  std::thread reader([&] { text = pipe.until_end(); });
  // Lines are taken again once the reader caught up.
  int attempts = 0;
  uint64_t before = 0;
  do {
    if (attempts++ > 0) std::this_thread::sleep_for(10ms);
    before = sink->dropped();
    logger->info("after");
  } while (sink->dropped() != before);
  logger.reset();
  sink.reset();
  pipe.close_writer();
  reader.join();

  int kept = 0;
  uint64_t reported = 0;
  int previous = -1;
  const std::regex line(
      R"((info line (\d+) x+)|(warning (\d+) log lines dropped: stderr did not keep up)|(info after))");
  size_t start = 0;
  std::string last;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    ASSERT_NE(end, std::string::npos) << "a line cut short";
    last = text.substr(start, end - start);
    std::smatch match;
    ASSERT_TRUE(std::regex_match(last, match, line)) << last;
    if (match[2].matched) {
      const int number = std::stoi(match[2]);
      EXPECT_GT(number, previous) << "lines out of order";
      previous = number;
      ++kept;
    }
    if (match[4].matched) reported += std::stoull(match[4]);
    start = end + 1;
  }
  EXPECT_EQ(last, "info after");
  EXPECT_GT(reported, 0u);
  EXPECT_EQ(kept + reported, static_cast<uint64_t>(lines + attempts - 1)) << "every dropped line is counted in the log";
}

}  // namespace
}  // namespace s1::server
