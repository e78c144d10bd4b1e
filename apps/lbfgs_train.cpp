#include "apps/lbfgs_train.hpp"

#include <algorithm>
#include <cmath>

#include "algos/registry.hpp"
#include "algos/sandblaster/lbfgs_driver.hpp"
#include "algos/sandblaster/sandblaster.hpp"
#include "apps/cli.hpp"
#include "optim/batch_objective.hpp"
#include "optim/trainer.hpp"

namespace troupe::apps {

namespace {

/// Sandblaster's own options (algos/sandblaster/).
const algos::sandblaster& settings(const train_options& o) {
  return dynamic_cast<const algos::sandblaster&>(o.algorithm_ref());
}

std::size_t examples_of(const train_options& o, const optim::dataset& d) {
  return o.train_examples > 0
             ? std::min<std::size_t>(d.size(), o.train_examples)
             : d.size();
}

/// Default portions: many more than workers (algorithms.md §2: P >> R), at
/// least 64, never more than one per example.
std::size_t portions_of(const train_options& o, std::size_t n) {
  auto given = settings(o).portions;
  auto p = given > 0 ? given : std::max<std::uint64_t>(64, 8 * o.workers);
  return static_cast<std::size_t>(std::min<std::uint64_t>(p, n));
}

double l2_of(const train_options& o) {
  return o.weight_decay >= 0 ? o.weight_decay : lbfgs_default_l2;
}

/// The progress display, fed by the driver's step per iteration.
class iteration_display : public actors::job_observer {
public:
  iteration_display(progress& bar, double iterations, std::size_t examples)
      : bar_(bar), iterations_(iterations),
        examples_(static_cast<double>(examples)) {}

  void on_step(const actors::step_event& e) override {
    samples_ += static_cast<double>(e.samples);
    progress_state s;
    s.step = e.steps;
    s.fraction = static_cast<double>(e.steps) / iterations_;
    s.epoch = samples_ / examples_;
    s.loss = e.loss;
    s.elapsed = e.seconds;
    s.samples_per_sec = e.seconds > 0 ? samples_ / e.seconds : 0;
    bar_.update(s, true);
  }

private:
  progress& bar_;
  double iterations_, examples_, samples_ = 0;
};

} // namespace

cluster_job prepare_lbfgs_job(const train_options& o,
                              optim::train_test loaded) {
  auto data = std::make_shared<const optim::train_test>(std::move(loaded));
  auto train = std::shared_ptr<const optim::dataset>(data, &data->train);
  auto n = examples_of(o, *train);
  const auto& lb = settings(o);
  if (lb.portions > n)
    throw usage_error("troupe train: --portions=" + std::to_string(lb.portions)
                      + " exceeds the " + std::to_string(n)
                      + " training examples");
  auto model = initial_model(o, *train);
  auto init = std::make_shared<const std::vector<float>>(
      model.params(), model.params() + model.size());
  auto job = std::make_shared<actors::lbfgs_job>();
  job->init = init;
  job->shards = static_cast<std::uint32_t>(o.shards);
  job->workers = static_cast<std::uint32_t>(o.workers);
  job->portions = portions_of(o, n);
  job->options.memory = lb.memory;
  job->options.max_iterations
      = o.max_steps > 0 ? o.max_steps : lbfgs_default_iterations;
  job->options.gradient_tolerance = lb.gradient_tolerance;
  job->max_seconds = o.max_seconds;
  job->backups = lb.backups;
  job->request_timeout = caf::duration{std::chrono::microseconds{
      static_cast<std::int64_t>(o.request_timeout * 1e6)}};
  optim::batch_objective_options bo;
  bo.model = o.model;
  bo.examples = n;
  bo.portions = job->portions;
  bo.l2 = l2_of(o);
  job->make_compute = [train, bo]() -> actors::portion_fn {
    auto f = std::make_shared<optim::batch_objective>(train, bo);
    return [f](const double* x, std::size_t size, std::size_t p, double* grad,
               std::uint64_t& samples) {
      return f->portion(x, size, p, grad, samples);
    };
  };
  cluster_job out;
  out.job.algorithm = o.algorithm_ref().clone();
  out.job.workers = job->workers;
  out.job.shards = job->shards;
  out.job.init = init;
  out.job.request_timeout = job->request_timeout;
  out.job.lbfgs = job;
  out.fingerprint = fingerprint(*init, *data);
  out.steps_per_epoch = 1;
  out.description
      = "troupe train: lbfgs (Sandblaster) with " + std::to_string(o.workers)
        + " workers and " + std::to_string(o.shards) + " shards, " + o.model
        + " on " + train->name + " (" + std::to_string(n) + " examples in "
        + std::to_string(job->portions) + " portions, "
        + std::to_string(init->size()) + " parameters), memory "
        + std::to_string(lb.memory) + ", L2 " + nlohmann::json(bo.l2).dump()
        + ", at most " + std::to_string(job->options.max_iterations)
        + " iterations, seed " + std::to_string(o.seed);
  return out;
}

nlohmann::json run_lbfgs_train(const train_options& o, optim::train_test loaded,
                               progress& bar) {
  auto test = std::make_shared<const optim::dataset>(loaded.test);
  auto shape = loaded.train.sample_shape;
  auto classes = loaded.train.classes;
  auto n = examples_of(o, loaded.train);
  auto prepared = prepare_lbfgs_job(o, std::move(loaded));
  auto job = prepared.job.lbfgs; // kept: prepared.job moves on
  prepared.job.observers.push_back(std::make_shared<iteration_display>(
      bar, static_cast<double>(job->options.max_iterations), n));
  bar.message(prepared.description);
  actors::runtime_options rt;
  rt.threads = o.threads;
  auto watch = attach_monitoring(o, prepared.job, bar);
  auto result
      = run_placed(o, std::move(prepared.job), prepared.fingerprint, bar, rt);
  // The final point's test accuracy (in float, as every algorithm's).
  auto model = optim::make_model<float>(o.model, shape, classes);
  optim::evaluation e;
  if (result.contains("x")) {
    auto x = result["x"].get<std::vector<double>>();
    std::copy(x.begin(), x.end(), model.params());
    if (o.on_final_params)
      o.on_final_params(model.params(), model.size());
    e = optim::evaluate(model, *test, 256);
    result.erase("x");
  }
  result["test_accuracy"] = e.accuracy;
  result["test_loss"] = e.loss;
  result["objective"] = result.value("f", 0.0);
  result.erase("f");
  result["steps"] = result.value("iterations", 0);
  auto samples = result.value("samples", std::uint64_t{0});
  auto seconds = result.value("seconds", 0.0);
  result["epochs"] = static_cast<double>(samples) / static_cast<double>(n);
  result["samples_per_sec"]
      = seconds > 0 ? static_cast<double>(samples) / seconds : 0.0;
  result["portions"] = job->portions;
  result["memory"] = settings(o).memory;
  result["l2"] = l2_of(o);
  result["train_examples"] = n;
  bar.message("troupe train: " + result.value("stop_reason", std::string{}));
  finish_monitoring(o, watch, result, bar);
  return result;
}

} // namespace troupe::apps
