// A job's metrics and curves for the monitoring endpoint: a job_observer that
// keeps Prometheus metrics (prometheus-cpp's registry and text serializer)
// and the loss / accuracy / throughput series, and serves them over HTTP.

#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/events.hpp"
#include "net/http_server.hpp"

namespace prometheus {
class Registry;
} // namespace prometheus

namespace troupe::net {

class job_monitor : public actors::job_observer {
public:
  job_monitor();
  ~job_monitor() override;

  void on_step(const actors::step_event& e) override;
  void on_evaluation(const actors::evaluation_event& e) override;
  void on_failure(const actors::failure_record& f) override;
  void on_finish(const std::string& report) override;

  /// The Prometheus text exposition of every metric (GET /metrics).
  std::string metrics_text() const;

  /// {"train": [...], "evaluations": [...]} (GET /api/series): the training
  /// curve sampled every `step_interval` steps, and every evaluation.
  nlohmann::json series() const;

  /// The routes of the endpoint: /metrics and /api/series.
  std::map<std::string, http_handler> routes();

  /// Training-curve points keep one step in this many (default 10).
  void set_step_interval(std::uint64_t n);

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace troupe::net
