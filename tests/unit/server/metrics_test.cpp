#include "server/metrics.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace s1::server
