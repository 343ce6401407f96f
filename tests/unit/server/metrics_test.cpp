#include "server/metrics.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

namespace s1::server {
namespace {

TEST(Metrics, RendersPrometheusText) {
  Metrics metrics;
  metrics.add_counter("s1serve_requests_total", {{"route", "/health"}, {"status", "200"}});
  metrics.add_counter("s1serve_requests_total", {{"route", "/health"}, {"status", "200"}});
  metrics.set_gauge("s1serve_queue_depth", {{"model", "m\"x"}}, 3);
  metrics.observe("s1serve_inference_seconds", {{"model", "m"}}, 0.003);
  metrics.observe("s1serve_inference_seconds", {{"model", "m"}}, 100.0);
  const std::string text = metrics.render();
  EXPECT_NE(text.find("# TYPE s1serve_requests_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("s1serve_requests_total{route=\"/health\",status=\"200\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("s1serve_queue_depth{model=\"m\\\"x\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("s1serve_inference_seconds_bucket{model=\"m\",le=\"0.0025\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("s1serve_inference_seconds_bucket{model=\"m\",le=\"0.005\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("s1serve_inference_seconds_bucket{model=\"m\",le=\"+Inf\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("s1serve_inference_seconds_count{model=\"m\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE s1serve_rejected_total counter\n"), std::string::npos);
}

TEST(Metrics, BatchHistogramsCountInPowersOfTwoNotSeconds) {
  Metrics metrics;
  metrics.observe(Series{"s1serve_batch_requests", "model=\"m\""}, 3.0);
  metrics.observe(Series{"s1serve_batch_requests", "model=\"m\""}, 16.0);
  metrics.observe("s1serve_batch_tokens", {{"model", "m"}}, 5000.0);
  const std::string text = metrics.render();
  EXPECT_NE(text.find("# TYPE s1serve_batch_requests histogram\n"), std::string::npos);
  EXPECT_NE(text.find("s1serve_batch_requests_bucket{model=\"m\",le=\"2\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("s1serve_batch_requests_bucket{model=\"m\",le=\"4\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("s1serve_batch_requests_bucket{model=\"m\",le=\"16\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("s1serve_batch_requests_sum{model=\"m\"} 19\n"), std::string::npos);
  EXPECT_NE(text.find("s1serve_batch_tokens_bucket{model=\"m\",le=\"4096\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("s1serve_batch_tokens_bucket{model=\"m\",le=\"8192\"} 1\n"), std::string::npos);
  // Seconds families keep their buckets.
  metrics.observe("s1serve_queue_wait_seconds", {{"model", "m"}}, 0.003);
  EXPECT_NE(metrics.render().find("s1serve_queue_wait_seconds_bucket{model=\"m\",le=\"0.005\"} 1\n"),
            std::string::npos);
}

TEST(Metrics, PreRenderedSeriesAreTheSameSeriesAsTheirLabels) {
  Metrics metrics;
  const std::string labels = Metrics::render_labels({{"route", "/v1/systemone"}, {"status", "200"}});
  EXPECT_EQ(labels, "route=\"/v1/systemone\",status=\"200\"");
  metrics.add_counter("s1serve_requests_total", {{"route", "/v1/systemone"}, {"status", "200"}});
  metrics.add_counter(Series{"s1serve_requests_total", labels}, 2.0);
  metrics.observe(Series{"s1serve_request_duration_seconds", "route=\"/v1/systemone\""}, 0.0002);
  metrics.observe("s1serve_request_duration_seconds", {{"route", "/v1/systemone"}}, 0.002);
  metrics.set_gauge(Series{"s1serve_in_flight_requests", ""}, 4);
  const std::string text = metrics.render();
  EXPECT_NE(text.find("s1serve_requests_total{route=\"/v1/systemone\",status=\"200\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("s1serve_request_duration_seconds_count{route=\"/v1/systemone\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("s1serve_request_duration_seconds_bucket{route=\"/v1/systemone\",le=\"0.0025\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("s1serve_in_flight_requests 4\n"), std::string::npos);
}

TEST(Metrics, CountersAndHistogramsAreSummedOverWriterThreads) {
  Metrics metrics;
  const std::string labels = Metrics::render_labels({{"route", "/v1/systemone"}, {"status", "200"}});
  constexpr int threads = 4;
  constexpr int per_thread = 1000;
  std::vector<std::thread> writers;
  for (int t = 0; t < threads; ++t) {
    writers.emplace_back([&metrics, &labels, t] {
      for (int i = 0; i < per_thread; ++i) {
        metrics.add_counter(Series{"s1serve_requests_total", labels});
        metrics.observe(Series{"s1serve_request_duration_seconds", "route=\"/v1/systemone\""}, t % 2 == 0 ? 0.0002 : 0.002);
      }
      metrics.set_gauge(Series{"s1serve_in_flight_requests", ""}, t);
    });
  }
  for (std::thread& writer : writers) writer.join();
  metrics.add_counter(Series{"s1serve_requests_total", labels});  // this thread's shard too
  metrics.set_gauge(Series{"s1serve_in_flight_requests", ""}, 7);  // a gauge keeps the last value set
  const std::string text = metrics.render();
  EXPECT_NE(text.find("s1serve_requests_total{route=\"/v1/systemone\",status=\"200\"} 4001\n"), std::string::npos) << text;
  EXPECT_NE(text.find("s1serve_request_duration_seconds_bucket{route=\"/v1/systemone\",le=\"0.001\"} 2000\n"),
            std::string::npos);
  EXPECT_NE(text.find("s1serve_request_duration_seconds_bucket{route=\"/v1/systemone\",le=\"0.0025\"} 4000\n"),
            std::string::npos);
  EXPECT_NE(text.find("s1serve_request_duration_seconds_count{route=\"/v1/systemone\"} 4000\n"), std::string::npos);
  EXPECT_NE(text.find("s1serve_request_duration_seconds_sum{route=\"/v1/systemone\"} 4.4"), std::string::npos);
  EXPECT_NE(text.find("s1serve_in_flight_requests 7\n"), std::string::npos);
  // Each series appears once, however many threads wrote it.
  EXPECT_EQ(text.find("s1serve_requests_total{"), text.rfind("s1serve_requests_total{"));
}

TEST(Metrics, HotSeriesRenderAsTheSeriesTheyName) {
  const std::string labels = Metrics::render_labels({{"route", "/v1/systemone"}, {"status", "200"}});
  const Series requests{"s1serve_requests_total", labels};
  const Series duration{"s1serve_request_duration_seconds", "route=\"/v1/systemone\""};
  Metrics plain;
  Metrics hot;
  const Metrics::HotSeries hot_requests = hot.hot(requests);
  const Metrics::HotSeries hot_duration = hot.hot(duration);
  EXPECT_EQ(hot.hot(Series{"s1serve_requests_total", labels}), hot_requests);  // registered once
  EXPECT_NE(hot_requests, hot_duration);
  // Nothing written yet: a registered series is not rendered.
  EXPECT_EQ(hot.render(), plain.render());
  constexpr int threads = 3;
  std::vector<std::thread> writers;
  for (int t = 0; t < threads; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) {
        const double seconds = t == 0 ? 0.0002 : 0.02;
        plain.add_counter(requests);
        plain.observe(duration, seconds);
        hot.add_counter(hot_requests);
        hot.observe(hot_duration, seconds);
      }
    });
  }
  for (std::thread& writer : writers) writer.join();
  // Hot and plain writes of one series meet in one line.
  plain.add_counter(requests, 2.0);
  hot.add_counter(requests, 2.0);
  const std::string text = hot.render();
  EXPECT_EQ(text, plain.render());
  EXPECT_NE(text.find("s1serve_requests_total{route=\"/v1/systemone\",status=\"200\"} 302\n"), std::string::npos) << text;
  EXPECT_NE(text.find("s1serve_request_duration_seconds_bucket{route=\"/v1/systemone\",le=\"0.001\"} 100\n"),
            std::string::npos);
  EXPECT_NE(text.find("s1serve_request_duration_seconds_count{route=\"/v1/systemone\"} 300\n"), std::string::npos);
}

TEST(Metrics, ScrapesWhileThreadsWrite) {
  Metrics metrics;
  std::atomic<bool> stop{false};
  std::thread writer([&metrics, &stop] {
    while (!stop.load()) metrics.add_counter("s1serve_rejected_total", {{"reason", "busy"}});
  });
  std::string text;
  for (int i = 0; i < 50; ++i) text = metrics.render();
  stop = true;
  writer.join();
  EXPECT_NE(text.find("# TYPE s1serve_rejected_total counter\n"), std::string::npos);
}

TEST(Metrics, OneThreadWritingTwoInstancesKeepsThemApart) {
  Metrics first;
  Metrics second;
  for (int i = 0; i < 3; ++i) {
    first.add_counter("s1serve_rejected_total", {{"reason", "a"}});
    second.add_counter("s1serve_rejected_total", {{"reason", "a"}}, 10.0);
  }
  EXPECT_NE(first.render().find("s1serve_rejected_total{reason=\"a\"} 3\n"), std::string::npos);
  EXPECT_NE(second.render().find("s1serve_rejected_total{reason=\"a\"} 30\n"), std::string::npos);
  auto third = std::make_unique<Metrics>();  // a later instance starts from zero
  third->add_counter("s1serve_rejected_total", {{"reason", "a"}});
  EXPECT_NE(third->render().find("s1serve_rejected_total{reason=\"a\"} 1\n"), std::string::npos);
}

}  // namespace
}  // namespace s1::server
