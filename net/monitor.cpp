#include "net/monitor.hpp"

#include <map>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "actors/coordinator.hpp"

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

  mutable std::mutex mtx; ///< guards the series
  std::uint64_t step_interval = 10, total_steps = 0, total_samples = 0;
  double smooth_loss = 0;
  nlohmann::json train = nlohmann::json::array();
  nlohmann::json evaluations = nlohmann::json::array();

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

void job_monitor::on_step(const actors::step_event& e) {
  auto& m = impl_->of(e.worker);
  m.steps->Increment();
  m.samples->Increment(static_cast<double>(e.samples));
  m.loss->Set(e.loss);
  std::lock_guard<std::mutex> guard{impl_->mtx};
  auto& st = *impl_;
  ++st.total_steps;
  st.total_samples += e.samples;
  st.smooth_loss
      = st.total_steps == 1 ? e.loss : 0.98 * st.smooth_loss + 0.02 * e.loss;
  if (st.total_steps % st.step_interval == 0)
    st.train.push_back({{"seconds", e.seconds},
                        {"steps", st.total_steps},
                        {"samples", st.total_samples},
                        {"loss", st.smooth_loss},
                        {"samples_per_sec",
                         e.seconds > 0 ? st.total_samples / e.seconds : 0.0}});
}

void job_monitor::on_evaluation(const actors::evaluation_event& e) {
  impl_->accuracy.Set(e.accuracy);
  impl_->test_loss.Set(e.loss);
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->evaluations.push_back({{"seconds", e.seconds},
                                {"steps", e.steps},
                                {"samples", e.samples},
                                {"accuracy", e.accuracy},
                                {"loss", e.loss}});
}

void job_monitor::on_failure(const actors::failure_record& f) {
  impl_->failures.Add({{"role", f.role}}).Increment();
}

void job_monitor::on_finish(const std::string&) {
  impl_->up.Set(0);
}

std::string job_monitor::metrics_text() const {
  return prometheus::TextSerializer{}.Serialize(impl_->registry->Collect());
}

nlohmann::json job_monitor::series() const {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  return {{"train", impl_->train}, {"evaluations", impl_->evaluations}};
}

std::map<std::string, http_handler> job_monitor::routes() {
  return {
      {"/metrics",
       [this](const std::string&) {
         return http_response{200, "text/plain; version=0.0.4", metrics_text()};
       }},
      {"/api/series", [this](const std::string&) {
         return http_response{200, "application/json", series().dump()};
       }}};
}

} // namespace troupe::net
