// The monitoring of a run (--monitor, --report, --monitor-linger): the
// recorder, its HTTP endpoint, the report at the end and the endpoint kept
// up after the job.

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "actors/stop_request.hpp"
#include "apps/cli.hpp"
#include "apps/cluster_train.hpp"
#include "apps/run_report.hpp"
#include "net/board.hpp"
#include "net/monitor.hpp"
#include "optim/model_spec.hpp"

namespace troupe::apps {

run_monitoring open_monitoring(const train_options& o, progress& bar) {
  // The monitoring endpoint lives as long as the run (monitor before server:
  // the server's routes use it).
  run_monitoring m;
  if (o.monitor.empty() && o.report.empty())
    return m;
  m.monitor = std::make_shared<net::job_monitor>();
  m.monitor->set_algo(o.algo);
  // A driver of its own reports a point per iteration, the objective as is.
  if (o.algorithm_ref().run_by() == algos::runner::own_driver) {
    m.monitor->set_step_interval(1);
    m.monitor->set_loss_smoothing(0);
  }
  if (!o.monitor.empty()) {
    net::http_options ho;
    ho.listen = net::parse_endpoint(o.monitor, "--monitor");
    ho.token = o.monitor_token;
    ho.public_paths = net::job_monitor::public_paths();
    m.endpoint = std::make_unique<net::http_server>(ho, m.monitor->routes());
    m.url = "http://" + ho.listen.host + ":"
            + std::to_string(m.endpoint->port()) + "/";
    bar.message("troupe train: monitoring at " + m.url
                + " (the dashboard; Prometheus at " + m.url + "metrics)");
  }
  if (!o.report.empty()) {
    // A running report for `troupe board`, replaced by the report itself.
    nlohmann::json live{{"algo", o.algo},
                        {"model", optim::model_label(o.model)},
                        {"workers", o.workers},
                        {"seed", o.seed},
                        {"pid", static_cast<long>(::getpid())},
                        {"monitor", m.url.empty() ? nlohmann::json(nullptr)
                                                  : nlohmann::json(m.url)}};
    std::ofstream out{std::filesystem::path{o.report} / net::live_file};
    out << live.dump() << '\n';
  }
  return m;
}

run_monitoring attach_monitoring(const train_options& o,
                                 actors::job_config& job, progress& bar) {
  auto m = open_monitoring(o, bar);
  if (m.monitor) {
    job.observers.push_back(m.monitor);
    job.monitor = m.monitor->view();
    job.node_name = net::process_name();
  }
  return m;
}

namespace {

/// The endpoint kept after the run (--monitor-linger).
run_monitoring& kept_monitoring() {
  static run_monitoring kept;
  return kept;
}

} // namespace

double linger_seconds(const std::string& text) {
  if (text.empty())
    return 0;
  if (text == "forever")
    return std::numeric_limits<double>::infinity();
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || errno != 0 || !std::isfinite(v)
      || v < 0)
    throw usage_error("troupe train: --monitor-linger=" + text
                      + ": a number of seconds (>= 0) or 'forever'");
  return v;
}

void linger_monitoring(const actors::stop_request& stop) {
  auto& kept = kept_monitoring();
  if (!kept.endpoint)
    return;
  auto seconds = kept.linger_seconds;
  std::ostringstream how;
  if (std::isinf(seconds))
    how << "until Ctrl-C";
  else
    how << "for " << seconds << " s (Ctrl-C ends it sooner)";
  std::cerr << "troupe train: the dashboard of the finished run stays at "
            << kept.url << ' ' << how.str() << std::endl;
  auto end = std::chrono::steady_clock::now()
             + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                 std::chrono::duration<double>(
                     std::min(seconds, 1e9))); // no overflow for "forever"
  while (!stop.requested() && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
  kept.endpoint.reset(); // before the monitor its routes use
  kept.monitor.reset();
  std::cerr << "troupe train: the dashboard closed" << std::endl;
}

void finish_monitoring(const train_options& o, run_monitoring& m,
                       nlohmann::json& result, progress& bar) {
  if (m.endpoint)
    result["monitor"] = m.url;
  if (o.complete_result)
    o.complete_result(result);
  // A run without actors has no coordinator to say the job ended.
  if (m.monitor)
    m.monitor->on_finish(result.dump());
  if (m.endpoint && o.linger_seconds > 0) {
    auto& kept = kept_monitoring();
    kept.url = m.url;
    kept.linger_seconds = o.linger_seconds;
    kept.monitor = m.monitor; // shared: the report below still reads it
    kept.endpoint = std::move(m.endpoint);
  }
  if (!o.report.empty()) {
    // The result is printed even if the report cannot be written.
    try {
      write_report(o.report, m.monitor->series(), result);
      std::error_code ec;
      std::filesystem::remove(std::filesystem::path{o.report} / net::live_file,
                              ec);
      result["report"] = o.report;
      bar.message("troupe train: report written to " + o.report);
    } catch (const std::exception& e) {
      result["report_error"] = e.what();
      bar.message(std::string{"troupe train: "} + e.what());
    }
  }
}

} // namespace troupe::apps
