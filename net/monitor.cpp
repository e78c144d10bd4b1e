#include "net/monitor.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "actors/coordinator.hpp"
#include "net/dashboard.hpp"
#include "net/monitor_export.hpp"

namespace troupe::net {

struct job_monitor::impl {
  std::shared_ptr<prometheus::Registry> registry
      = std::make_shared<prometheus::Registry>();
  prometheus::Family<prometheus::Counter>& steps
      = prometheus::BuildCounter()
            .Name("troupe_worker_steps_total")
            .Help("Training steps a worker finished")
            .Register(*registry);
  prometheus::Family<prometheus::Counter>& samples
      = prometheus::BuildCounter()
            .Name("troupe_worker_samples_total")
            .Help("Training examples a worker processed")
            .Register(*registry);
  prometheus::Family<prometheus::Gauge>& loss
      = prometheus::BuildGauge()
            .Name("troupe_worker_loss")
            .Help("A worker's last minibatch loss")
            .Register(*registry);
  prometheus::Family<prometheus::Gauge>& test
      = prometheus::BuildGauge()
            .Name("troupe_test")
            .Help("The last evaluation on the test set")
            .Register(*registry);
  prometheus::Family<prometheus::Counter>& failures
      = prometheus::BuildCounter()
            .Name("troupe_failures_total")
            .Help("Roles lost because their node died or hung")
            .Register(*registry);
  prometheus::Family<prometheus::Gauge>& leader
      = prometheus::BuildGauge()
            .Name("troupe_leader")
            .Help("LSGD: the worker leading each group (group=\"global\": "
                  "the global leader)")
            .Register(*registry);
  prometheus::Family<prometheus::Counter>& leader_changes
      = prometheus::BuildCounter()
            .Name("troupe_leader_changes_total")
            .Help("LSGD: leader changes per group")
            .Register(*registry);
  prometheus::Family<prometheus::Gauge>& running
      = prometheus::BuildGauge()
            .Name("troupe_job_running")
            .Help("1 while the job runs, 0 once it has ended")
            .Register(*registry);

  struct worker_metrics {
    prometheus::Counter* steps;
    prometheus::Counter* samples;
    prometheus::Gauge* loss;
  };
  std::map<messages::worker_id, worker_metrics> workers;
  prometheus::Gauge& accuracy = test.Add({{"metric", "accuracy"}});
  prometheus::Gauge& test_loss = test.Add({{"metric", "loss"}});
  prometheus::Gauge& up = running.Add({});
  prometheus::Counter& nodes_joined = prometheus::BuildCounter()
                                          .Name("troupe_nodes_joined_total")
                                          .Help("Nodes that joined the job")
                                          .Register(*registry)
                                          .Add({});

  std::shared_ptr<actors::cluster_view> view
      = std::make_shared<actors::cluster_view>();
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();

  mutable std::mutex mtx; ///< guards the series and the job's summary
  std::string algo = "downpour";
  bool ended = false;
  double ended_at = 0, accuracy_now = -1;
  std::uint64_t step_interval = 10, total_steps = 0, total_samples = 0;
  double smooth_loss = 0, keep = 0.98;
  nlohmann::json train = nlohmann::json::array();
  nlohmann::json evaluations = nlohmann::json::array();
  /// Nodes that joined the running job: {node, seconds}.
  nlohmann::json joined = nlohmann::json::array();

  worker_metrics& of(messages::worker_id w) {
    auto i = workers.find(w);
    if (i != workers.end())
      return i->second;
    prometheus::Labels l{{"worker", std::to_string(w)}};
    return workers[w] = {&steps.Add(l), &samples.Add(l), &loss.Add(l)};
  }
};

job_monitor::job_monitor() : impl_(std::make_unique<impl>()) {
  impl_->up.Set(1);
}

job_monitor::~job_monitor() = default;

void job_monitor::set_step_interval(std::uint64_t n) {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->step_interval = n == 0 ? 1 : n;
}

void job_monitor::set_loss_smoothing(double keep) {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->keep = std::clamp(keep, 0.0, 1.0);
}

void job_monitor::on_step(const actors::step_event& e) {
  auto& m = impl_->of(e.worker);
  m.steps->Increment();
  m.samples->Increment(static_cast<double>(e.samples));
  m.loss->Set(e.loss);
  std::lock_guard<std::mutex> guard{impl_->mtx};
  auto& st = *impl_;
  ++st.total_steps;
  st.total_samples += e.samples;
  st.smooth_loss = st.total_steps == 1
                       ? e.loss
                       : st.keep * st.smooth_loss + (1 - st.keep) * e.loss;
  if (st.total_steps % st.step_interval == 0)
    st.train.push_back({{"seconds", e.seconds},
                        {"steps", st.total_steps},
                        {"samples", st.total_samples},
                        {"bytes", st.view->bytes_sent()},
                        {"loss", st.smooth_loss},
                        {"samples_per_sec",
                         e.seconds > 0 ? st.total_samples / e.seconds : 0.0}});
}

void job_monitor::on_evaluation(const actors::evaluation_event& e) {
  impl_->accuracy.Set(e.accuracy);
  impl_->test_loss.Set(e.loss);
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->accuracy_now = e.accuracy;
  impl_->evaluations.push_back({{"seconds", e.seconds},
                                {"steps", e.steps},
                                {"samples", e.samples},
                                {"bytes", impl_->view->bytes_sent()},
                                {"accuracy", e.accuracy},
                                {"loss", e.loss}});
}

void job_monitor::on_failure(const actors::failure_record& f) {
  impl_->failures.Add({{"role", f.role}}).Increment();
  impl_->view->lost(f.node);
}

void job_monitor::on_node_joined(const actors::node_event& e) {
  impl_->nodes_joined.Increment();
  if (e.seconds <= 0)
    return; // one of the nodes the job started with
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->joined.push_back({{"node", e.node}, {"seconds", e.seconds}});
}

void job_monitor::on_leader_change(const actors::leader_event& e) {
  // e.leader is the worker's actor name, "worker N".
  auto digits = e.leader.find_first_of("0123456789");
  double id = digits == std::string::npos
                  ? -1
                  : std::strtod(e.leader.c_str() + digits, nullptr);
  std::lock_guard<std::mutex> guard{impl_->mtx};
  auto group = e.global ? std::string{"global"} : std::to_string(e.group);
  impl_->leader.Add({{"group", group}}).Set(id);
  impl_->leader_changes.Add({{"group", group}}).Increment();
}

void job_monitor::on_finish(const std::string&) {
  impl_->up.Set(0);
  std::lock_guard<std::mutex> guard{impl_->mtx};
  if (impl_->ended)
    return; // the first end counts (a run without actors says it too)
  impl_->ended = true;
  impl_->ended_at = std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - impl_->t0)
                        .count();
}

std::shared_ptr<actors::cluster_view> job_monitor::view() const {
  return impl_->view;
}

void job_monitor::set_algo(std::string algo) {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->algo = std::move(algo);
}

prometheus::Registry& job_monitor::registry() {
  return *impl_->registry;
}

nlohmann::json job_monitor::cluster() const {
  auto& st = *impl_;
  nlohmann::json job;
  bool running;
  {
    std::lock_guard<std::mutex> guard{st.mtx};
    running = !st.ended;
    job = {{"algo", st.algo},
           {"running", running},
           {"seconds", running ? std::chrono::duration<double>(
                                     std::chrono::steady_clock::now() - st.t0)
                                     .count()
                               : st.ended_at},
           {"steps", st.total_steps},
           {"samples", st.total_samples},
           {"loss", st.total_steps > 0 ? nlohmann::json(st.smooth_loss)
                                       : nlohmann::json(nullptr)},
           {"accuracy", st.accuracy_now < 0 ? nlohmann::json(nullptr)
                                            : nlohmann::json(st.accuracy_now)},
           {"stuck_after_ms", st.view->stuck_after().count()},
           {"joined", st.joined}};
  }
  auto out = st.view->to_json(running);
  out["job"] = std::move(job);
  return out;
}

std::string job_monitor::metrics_text() const {
  auto families = impl_->registry->Collect();
  bool running;
  {
    std::lock_guard<std::mutex> guard{impl_->mtx};
    running = !impl_->ended;
  }
  auto actors = actor_families(impl_->view->actors(running));
  families.insert(families.end(), actors.begin(), actors.end());
  return prometheus::TextSerializer{}.Serialize(families);
}

nlohmann::json job_monitor::series() const {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  return {{"train", impl_->train}, {"evaluations", impl_->evaluations}};
}

std::set<std::string> job_monitor::public_paths() {
  return page_paths();
}

std::map<std::string, http_handler> asset_routes() {
  return {{"/chart.js",
           [](const std::string&) {
             return http_response{200, "text/javascript; charset=utf-8",
                                  chart_js()};
           }},
          {"/page.css", [](const std::string&) {
             return http_response{200, "text/css; charset=utf-8", page_css()};
           }}};
}

std::set<std::string> page_paths() {
  return {"/", "/chart.js", "/page.css"};
}

std::map<std::string, http_handler> job_monitor::routes() {
  auto routes = asset_routes();
  routes.insert(
      {{"/",
        [](const std::string&) {
          return http_response{200, "text/html; charset=utf-8",
                               dashboard_html()};
        }},
       {"/api/cluster",
        [this](const std::string&) {
          return http_response{200, "application/json", cluster().dump()};
        }},
       {"/metrics",
        [this](const std::string&) {
          return http_response{200, "text/plain; version=0.0.4",
                               metrics_text()};
        }},
       {"/api/series", [this](const std::string&) {
          return http_response{200, "application/json", series().dump()};
        }}});
  return routes;
}

} // namespace troupe::net
