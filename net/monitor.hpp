// A job's metrics and curves for the monitoring endpoint: a job_observer that
// keeps Prometheus metrics (prometheus-cpp's registry and text serializer),
// the loss / accuracy / throughput series and the cluster's picture (every
// actor's probe, via the coordinator's cluster monitor), and serves them
// over HTTP: /metrics, /api/series, /api/cluster and the dashboard at /.

#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/events.hpp"
#include "actors/monitor.hpp"
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
  void on_node_joined(const actors::node_event& e) override;
  void on_leader_change(const actors::leader_event& e) override;
  void on_finish(const std::string& report) override;

  /// The cluster's picture, for job_config::monitor.
  std::shared_ptr<actors::cluster_view> view() const;

  /// Names the job's algorithm in /api/cluster.
  void set_algo(std::string algo);

  /// Application metrics: add families to this registry and they appear in
  /// GET /metrics.
  prometheus::Registry& registry();

  /// GET /api/cluster: {"job": {...}, "nodes", "actors", "links"}
  /// (docs/monitoring.md).
  nlohmann::json cluster() const;

  /// The Prometheus text exposition of every metric (GET /metrics).
  std::string metrics_text() const;

  /// {"train": [...], "evaluations": [...]} (GET /api/series): the training
  /// curve sampled every `step_interval` steps, and every evaluation.
  nlohmann::json series() const;

  /// The routes of the endpoint: /, /chart.js, /metrics, /api/series,
  /// /api/cluster.
  std::map<std::string, http_handler> routes();

  /// The routes that carry no data (the page and its script), for
  /// http_options::public_paths: served without the token.
  static std::set<std::string> public_paths();

  /// Training-curve points keep one step in this many (default 10).
  void set_step_interval(std::uint64_t n);

  /// The training loss in the series is smoothed, each step keeping
  /// `keep` of the previous value (default 0.98; 0: the raw values, as
  /// Sandblaster's objective per iteration).
  void set_loss_smoothing(double keep);

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace troupe::net
