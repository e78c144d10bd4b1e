#include "apps/lbfgs_train.hpp"

#include <algorithm>
#include <cmath>

#include "actors/lbfgs_driver.hpp"
#include "algos/registry.hpp"
#include "apps/cli.hpp"
#include "optim/batch_objective.hpp"
#include "optim/trainer.hpp"

namespace troupe::apps {

void add_lbfgs_options(option_parser& p, train_options& o) {
  p.add(o.portions, "portions",
        "lbfgs: portions per batch, taken by idle workers (default: 8 "
        "per worker, at least 64)")
      .add(o.memory, "memory", "lbfgs: history pairs m (default 10)")
      .add(o.gradient_tolerance, "gradient-tolerance",
           "lbfgs: stop once the gradient norm is below (default 1e-6)")
      .add(o.backups, "backups",
           "lbfgs: backup copies of outstanding portions at the end of a "
           "pass (default true)");
}

void validate_lbfgs(const train_options& o) {
  auto fail = [](const std::string& what) {
    throw usage_error("troupe train: --algo=lbfgs: " + what);
  };
  if (o.lr != 0 || !o.optimizer.empty() || !o.server_optimizer.empty()
      || o.momentum != 0.9 || o.schedule != "step" || o.lr_decay != 0
      || o.lr_step_epochs != 0 || o.warmup_epochs != 0 || o.local_lr >= 0)
    fail("the step comes from the line search: --lr, --optimizer, "
         "--server-optimizer, --momentum, --schedule, --lr-decay, "
         "--lr-step-epochs, --warmup-epochs and --local-lr do not apply");
  if (o.n_fetch != 1 || o.n_push != 1 || o.staleness_bound >= 0
      || o.staleness_aware || o.warm_start_steps > 0)
    fail("every iteration is a full-batch step: --n-fetch, --n-push, "
         "--staleness-bound, --staleness-aware and --warm-start-steps do not "
         "apply");
  if (o.epochs != 0 || o.target_accuracy != 0 || o.eval_every != 0)
    fail("--epochs, --target-accuracy and --eval-every do not apply; stop "
         "with --max-steps (iterations), --max-seconds or "
         "--gradient-tolerance");
  if (o.memory < 1 || o.memory > 1000)
    fail("--memory must be in [1, 1000]");
  if (o.portions > 1000000)
    fail("--portions must be at most 1000000");
  if (!(o.gradient_tolerance >= 0) || !std::isfinite(o.gradient_tolerance))
    fail("--gradient-tolerance must be zero or positive");
  if (o.weight_decay < 0 && o.weight_decay != -1)
    fail("--weight-decay (the L2 penalty) must be zero or positive");
}

namespace {

std::size_t examples_of(const train_options& o, const optim::dataset& d) {
  return o.train_examples > 0
             ? std::min<std::size_t>(d.size(), o.train_examples)
             : d.size();
}

/// Default portions: many more than workers (algorithms.md §2: P >> R), at
/// least 64, never more than one per example.
std::size_t portions_of(const train_options& o, std::size_t n) {
  auto p = o.portions > 0 ? o.portions
                          : std::max<std::uint64_t>(64, 8 * o.workers);
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
  if (o.portions > n)
    throw usage_error("troupe train: --portions=" + std::to_string(o.portions)
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
  job->options.memory = o.memory;
  job->options.max_iterations
      = o.max_steps > 0 ? o.max_steps : lbfgs_default_iterations;
  job->options.gradient_tolerance = o.gradient_tolerance;
  job->max_seconds = o.max_seconds;
  job->backups = o.backups;
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
  out.job.algorithm = algos::make_algorithm("lbfgs");
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
        + std::to_string(o.memory) + ", L2 " + nlohmann::json(bo.l2).dump()
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
  result["memory"] = o.memory;
  result["l2"] = l2_of(o);
  result["train_examples"] = n;
  bar.message("troupe train: " + result.value("stop_reason", std::string{}));
  finish_monitoring(o, watch, result, bar);
  return result;
}

} // namespace troupe::apps
