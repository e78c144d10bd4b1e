#include "apps/driver_train.hpp"

#include <memory>

#include "apps/cli.hpp"
#include "apps/durable.hpp"

namespace troupe::apps {

namespace {

/// The progress display, fed by the driver's step events (a step of a
/// driver may be an iteration over every example: the epochs count the
/// samples it reports).
class step_display : public actors::job_observer {
public:
  step_display(progress& bar, double steps, std::size_t examples)
      : bar_(bar), steps_(steps), examples_(static_cast<double>(examples)) {}

  void on_step(const actors::step_event& e) override {
    samples_ += static_cast<double>(e.samples);
    progress_state s;
    s.step = e.steps;
    s.fraction = static_cast<double>(e.steps) / steps_;
    s.epoch = samples_ / examples_;
    s.loss = e.loss;
    s.elapsed = e.seconds;
    s.samples_per_sec = e.seconds > 0 ? samples_ / e.seconds : 0;
    bar_.update(s, true);
  }

private:
  progress& bar_;
  double steps_, examples_, samples_ = 0;
};

} // namespace

cluster_job prepare_driver_job(const train_options& o,
                               optim::train_test loaded) {
  auto data = std::make_shared<const optim::train_test>(std::move(loaded));
  auto train = std::shared_ptr<const optim::dataset>(data, &data->train);
  auto n = examples_of(o, *train);
  auto model = initial_model(o, *train);
  auto init = std::make_shared<const std::vector<float>>(
      model.params(), model.params() + model.size());
  cluster_job out;
  auto& job = out.job;
  job.workers = static_cast<std::uint32_t>(o.workers);
  job.shards = static_cast<std::uint32_t>(o.shards);
  job.init = init;
  job.request_timeout = caf::duration{std::chrono::microseconds{
      static_cast<std::int64_t>(o.request_timeout * 1e6)}};
  algos::job_build build{o, job};
  build.train = train;
  build.examples = n;
  build.layers = model.ranges().ranges();
  out.algorithm = build_algorithm(o, build);
  out.fingerprint = fingerprint(*init, *data);
  out.steps_per_epoch = 1;
  out.steps_per_worker = build.steps_per_worker;
  out.examples = n;
  out.description = "troupe train: " + out.algorithm->describe(build);
  return out;
}

nlohmann::json run_driver_train(const train_options& o,
                                optim::train_test loaded, progress& bar) {
  auto test = std::make_shared<const optim::dataset>(loaded.test);
  auto prepared = prepare_driver_job(o, std::move(loaded));
  auto algorithm = prepared.algorithm; // kept: prepared.job moves on
  prepared.job.observers.push_back(std::make_shared<step_display>(
      bar, static_cast<double>(prepared.steps_per_worker), prepared.examples));
  bar.message(prepared.description);
  actors::runtime_options rt;
  rt.threads = o.threads;
  auto watch = attach_monitoring(o, prepared.job, bar);
  prepared.job.stop = o.stop;
  attach_checkpoints(o, prepared.job);
  if (prepared.job.resume)
    bar.message("troupe train: resumed from " + prepared.job.resume->path
                + " at step "
                + std::to_string(prepared.job.resume->progress.value(
                    "total_steps", std::uint64_t{0})));
  auto result
      = run_placed(o, std::move(prepared.job), prepared.fingerprint, bar, rt);
  std::vector<float> params;
  algorithm->complete_result(result, *test, params);
  if (o.on_final_params && !params.empty())
    o.on_final_params(params.data(), params.size());
  finish_monitoring(o, watch, result, bar);
  return result;
}

} // namespace troupe::apps
