// Sandblaster's run over the training set (build), its one-line description
// and the completion of its driver's final JSON (the final point's test
// accuracy, the objective, the run's settings).

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "actors/coordinator.hpp"
#include "algos/sandblaster/lbfgs_driver.hpp"
#include "algos/sandblaster/sandblaster.hpp"
#include "optim/batch_objective.hpp"
#include "optim/model_spec.hpp"
#include "optim/param_hash.hpp"
#include "optim/trainer.hpp"

namespace troupe::algos {

namespace {

/// Default portions: many more than workers (algorithms.md §2: P >> R), at
/// least 64, never more than one per example.
std::size_t portions_of(std::uint64_t given, std::uint64_t workers,
                        std::size_t n) {
  auto p = given > 0 ? given : std::max<std::uint64_t>(64, 8 * workers);
  return static_cast<std::size_t>(std::min<std::uint64_t>(p, n));
}

} // namespace

void sandblaster::build(job_build& b) {
  const auto& o = b.options;
  auto n = b.examples;
  if (portions > n)
    throw std::invalid_argument("--portions=" + std::to_string(portions)
                                + " exceeds the " + std::to_string(n)
                                + " training examples");
  if (!b.train || !b.job.init)
    throw std::invalid_argument("lbfgs: the job has no training set or "
                                "initial parameters");
  auto job = std::make_shared<lbfgs_job>();
  job->init = b.job.init;
  job->shards = b.job.shards;
  job->workers = b.job.workers;
  job->portions = portions_of(portions, o.workers, n);
  job->options.memory = memory;
  job->options.max_iterations
      = o.max_steps > 0 ? o.max_steps : default_iterations;
  job->options.gradient_tolerance = gradient_tolerance;
  job->max_seconds = o.max_seconds;
  job->backups = backups;
  job->request_timeout = b.job.request_timeout;
  l2 = o.weight_decay >= 0 ? o.weight_decay : default_l2;
  model = o.model;
  sample_shape = b.train->sample_shape;
  classes = b.train->classes;
  train_examples = n;
  optim::batch_objective_options bo;
  bo.model = o.model;
  bo.examples = n;
  bo.portions = job->portions;
  bo.l2 = l2;
  job->make_compute = [train = b.train, bo]() -> portion_fn {
    auto f = std::make_shared<optim::batch_objective>(train, bo);
    return [f](const double* x, std::size_t size, std::size_t p, double* grad,
               std::uint64_t& samples) {
      return f->portion(x, size, p, grad, samples);
    };
  };
  b.steps_per_worker = job->options.max_iterations;
  lbfgs = std::move(job);
}

std::string sandblaster::describe(const job_build& b) const {
  const auto& o = b.options;
  auto params = b.job.init ? b.job.init->size() : 0;
  auto data = b.train ? b.train->name : o.data;
  return "lbfgs (Sandblaster) with " + std::to_string(o.workers)
         + " workers and " + std::to_string(o.shards) + " shards, "
         + optim::model_label(o.model) + " on " + data + " ("
         + std::to_string(train_examples) + " examples in "
         + std::to_string(lbfgs ? lbfgs->portions : 0) + " portions, "
         + std::to_string(params) + " parameters), memory "
         + std::to_string(memory) + ", L2 " + nlohmann::json(l2).dump()
         + ", at most "
         + std::to_string(lbfgs ? lbfgs->options.max_iterations : 0)
         + " iterations, seed " + std::to_string(o.seed);
}

void sandblaster::complete_result(nlohmann::json& result,
                                  const optim::dataset& test,
                                  std::vector<float>& params) const {
  // The final point's test accuracy (in float, as every algorithm's).
  optim::evaluation e;
  if (result.contains("x")) {
    auto net = optim::make_model<float>(model, sample_shape, classes);
    auto x = result["x"].get<std::vector<double>>();
    std::copy(x.begin(), x.end(), net.params());
    params.assign(net.params(), net.params() + net.size());
    e = optim::evaluate(net, test, 256);
    result.erase("x");
    result["param_hash"] = optim::hash_params(params.data(), params.size());
  }
  result["test_accuracy"] = e.accuracy;
  result["test_loss"] = e.loss;
  result["objective"] = result.value("f", 0.0);
  result.erase("f");
  result["steps"] = result.value("iterations", 0);
  auto samples = result.value("samples", std::uint64_t{0});
  auto seconds = result.value("seconds", 0.0);
  auto n = std::max<std::size_t>(train_examples, 1);
  result["epochs"] = static_cast<double>(samples) / static_cast<double>(n);
  result["samples_per_sec"]
      = seconds > 0 ? static_cast<double>(samples) / seconds : 0.0;
  result["portions"] = lbfgs ? lbfgs->portions : 0;
  result["memory"] = memory;
  result["l2"] = l2;
  result["train_examples"] = train_examples;
}

} // namespace troupe::algos
