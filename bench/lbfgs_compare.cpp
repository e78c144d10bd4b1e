// Sandblaster L-BFGS against Downpour with AdaGrad on the same full-batch
// objective (mean cross-entropy of logreg + l2/2 ||x||^2), in one run on
// this machine:
// - per data set (Fashion-MNIST's 60000 examples, 10 classes; synthetic
//   LOGREG): the optimum's objective f* (L-BFGS run to a gradient norm of
//   1e-7 or 3000 iterations; its second half's relative gain bounds
//   the error of f*), then the seconds and passes over the data each algorithm
//   needs to come within 1e-4 relative of f* (Downpour: its training objective
//   is evaluated every 0.25 epoch, over a few AdaGrad rates, within a time
//   budget; not reached: null, with the closest gap it got);
// - the backup tasks: L-BFGS with one worker 4x slower than the others, the
//   same iterations with and without backup copies at the end of a pass, at
//   the default portions and at 2 per worker.
// Prints one JSON object on stdout; progress goes to stderr.
//
//   lbfgs_compare [--data=fashion-mnist,synthetic-logreg] [--workers=4]
//                 [--shards=2] [--budget=60] [--rates=0.03,0.1,0.3]
//                 [--reference-iterations=3000] [--slow-iterations=15]
//                 [--seed=1]

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "actors/job.hpp"
#include "algos/downpour/downpour.hpp"
#include "algos/sandblaster/lbfgs_driver.hpp"
#include "algos/sandblaster/sandblaster.hpp"
#include "apps/cluster_train.hpp"
#include "apps/data_source.hpp"
#include "apps/driver_train.hpp"
#include "optim/batch_objective.hpp"
#include "optim/trainer.hpp"

namespace {

using namespace troupe;

struct settings {
  std::vector<std::string> data{"fashion-mnist", "synthetic-logreg"};
  std::uint64_t workers = 4, shards = 2, seed = 1, slow_iterations = 15;
  std::uint64_t reference_iterations = 3000;
  double budget = 60, l2 = algos::sandblaster::default_l2, relative = 1e-4;
  std::vector<double> rates{0.03, 0.1, 0.3};
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in{s};
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty())
      out.push_back(item);
  return out;
}

settings parse(int argc, char** argv) {
  settings s;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto eq = a.find('=');
    auto key = a.substr(0, eq);
    auto val = eq == std::string::npos ? std::string{} : a.substr(eq + 1);
    if (key == "--data")
      s.data = split(val);
    else if (key == "--workers")
      s.workers = std::stoull(val);
    else if (key == "--shards")
      s.shards = std::stoull(val);
    else if (key == "--budget")
      s.budget = std::stod(val);
    else if (key == "--seed")
      s.seed = std::stoull(val);
    else if (key == "--reference-iterations")
      s.reference_iterations = std::stoull(val);
    else if (key == "--slow-iterations")
      s.slow_iterations = std::stoull(val);
    else if (key == "--rates") {
      s.rates.clear();
      for (auto& r : split(val))
        s.rates.push_back(std::stod(r));
    } else
      throw std::invalid_argument("unknown argument " + a);
  }
  if (s.workers < 2)
    throw std::invalid_argument("--workers must be at least 2");
  return s;
}

apps::train_options lbfgs_options(const settings& s, const std::string& data) {
  apps::train_options o;
  o.algo = "lbfgs";
  o.model = "logreg";
  o.data = data;
  o.seed = s.seed;
  o.workers = s.workers;
  o.shards = s.shards;
  o.weight_decay = s.l2;
  o.progress = "none";
  return o;
}

/// First trace entry at or below the target: {seconds, passes, iteration}.
nlohmann::json lbfgs_reach(const nlohmann::json& trace, double target,
                           double passes_per_pass) {
  for (auto& t : trace)
    if (t["f"].get<double>() <= target)
      return {{"seconds_to_target", t["seconds"]},
              {"passes_to_target", t["passes"].get<double>() * passes_per_pass},
              {"iterations_to_target", t["iteration"]}};
  return {{"seconds_to_target", nullptr}, {"passes_to_target", nullptr}};
}

nlohmann::json run_downpour(const settings& s, const optim::train_test& data,
                            double lr, double f_star) {
  apps::train_options o;
  o.algo = "downpour";
  o.model = "logreg";
  o.workers = s.workers;
  o.shards = s.shards;
  o.seed = s.seed;
  troupe::apps::algorithm_options<troupe::algos::downpour>(o).server_optimizer
      = "adagrad";
  o.optimizer = "sgd";
  o.lr = lr;
  o.weight_decay = s.l2;
  o.schedule = "constant";
  o.epochs = 1000; // the time budget ends it
  o.max_seconds = s.budget;
  o.eval_every = 0.25;
  o.lr_decay = 1;
  o.lr_step_epochs = 1;
  o.progress = "none";
  auto prepared = apps::prepare_cluster_job(o, data);
  auto train = std::make_shared<const optim::dataset>(data.train);
  // The evaluator reports the training objective (as "test_loss").
  optim::batch_objective_options bo;
  bo.model = "logreg";
  bo.portions = 1;
  bo.l2 = s.l2;
  auto f = std::make_shared<optim::batch_objective>(train, bo);
  prepared.job.evaluate = [f](const float* p, std::size_t n) {
    std::vector<double> x(p, p + n), g;
    optim::evaluation e;
    e.loss = f->full(x, g);
    e.samples = f->examples();
    return e;
  };
  auto r = actors::run_job(std::move(prepared.job));
  auto examples = static_cast<double>(data.train.size());
  nlohmann::json out{{"lr", lr}, {"seconds", r["seconds"]}};
  double best = INFINITY;
  out["seconds_to_target"] = nullptr;
  out["passes_to_target"] = nullptr;
  for (auto& e : r["evaluations"]) {
    double obj = e["test_loss"].get<double>();
    best = std::min(best, obj);
    if (out["seconds_to_target"].is_null()
        && obj <= f_star * (1 + s.relative)) {
      out["seconds_to_target"] = e["seconds"];
      out["passes_to_target"] = e["samples"].get<double>() / examples;
    }
  }
  out["best_objective"] = best;
  out["best_relative_gap"] = (best - f_star) / f_star;
  out["passes"] = r["samples"].get<double>() / examples;
  return out;
}

/// A data set as troupe train loads it (standardized).
optim::train_test load(const settings& s, const std::string& name) {
  auto data = apps::load_data(name, s.seed);
  optim::standardize(data);
  return data;
}

nlohmann::json compare(const settings& s, const std::string& name,
                       const optim::train_test& data) {
  std::cerr << "lbfgs_compare: " << name << std::endl;
  // f*: L-BFGS to a gradient norm of 1e-7 (or --reference-iterations);
  // how much its second half still gained bounds how far f* may be off.
  auto o = lbfgs_options(s, name);
  troupe::apps::algorithm_options<troupe::algos::sandblaster>(o)
      .gradient_tolerance
      = 1e-7;
  o.max_steps = s.reference_iterations;
  apps::progress quiet{apps::progress_style::none, ""};
  auto ref = apps::run_driver_train(o, data, quiet);
  if (ref.contains("error"))
    throw std::runtime_error(ref["error"].get<std::string>());
  double f_star = ref["objective"].get<double>();
  double target = f_star * (1 + s.relative);
  std::cerr << "  f* = " << f_star << " (" << ref["iterations"]
            << " iterations, " << ref["seconds"] << " s)" << std::endl;
  nlohmann::json lb = lbfgs_reach(ref["trace"], target, 1.0);
  lb["seconds_per_iteration"]
      = ref["seconds"].get<double>()
        / std::max(ref["iterations"].get<double>(), 1.0);
  lb["stop_reason"] = ref["stop_reason"];
  lb["iterations"] = ref["iterations"];
  lb["gradient_norm"] = ref["gradient_norm"];
  const auto& trace = ref["trace"];
  double f_half = trace.at(trace.size() / 2)["f"].get<double>();
  lb["second_half_relative_gain"] = (f_half - f_star) / f_star;
  // Where L-BFGS stood when Downpour's budget ran out.
  double f_budget = trace.at(0)["f"].get<double>();
  for (auto& t : trace)
    if (t["seconds"].get<double>() <= s.budget)
      f_budget = t["f"].get<double>();
  lb["relative_gap_at_budget"] = (f_budget - f_star) / f_star;
  lb["test_accuracy"] = ref["test_accuracy"];
  nlohmann::json dp = nlohmann::json::array();
  nlohmann::json best_dp;
  for (double lr : s.rates) {
    std::cerr << "  downpour adagrad lr " << lr << std::endl;
    auto r = run_downpour(s, data, lr, f_star);
    std::cerr << "    best gap " << r["best_relative_gap"] << std::endl;
    if (!r["seconds_to_target"].is_null()
        && (best_dp.is_null()
            || r["seconds_to_target"].get<double>()
                   < best_dp["seconds_to_target"].get<double>()))
      best_dp = r;
    dp.push_back(r);
  }
  nlohmann::json out{{"data", name},
                     {"examples", ref["train_examples"]},
                     {"l2", s.l2},
                     {"f_star", f_star},
                     {"target_relative", s.relative},
                     {"lbfgs", lb},
                     {"downpour_adagrad", dp}};
  if (!best_dp.is_null() && !lb["seconds_to_target"].is_null())
    out["downpour_over_lbfgs_seconds"]
        = best_dp["seconds_to_target"].get<double>()
          / lb["seconds_to_target"].get<double>();
  else
    out["downpour_over_lbfgs_seconds"] = nullptr;
  // At equal time (the budget): Downpour's best gap over L-BFGS's.
  double best_gap = INFINITY;
  for (auto& r : dp)
    best_gap = std::min(best_gap, r["best_relative_gap"].get<double>());
  // (null once L-BFGS has converged to f* itself.)
  double lb_gap = lb["relative_gap_at_budget"].get<double>();
  out["gap_ratio_at_budget"] = lb_gap > 1e-12
                                   ? nlohmann::json(best_gap / lb_gap)
                                   : nlohmann::json(nullptr);
  return out;
}

/// One worker 4x slower, the same iterations with and without backup
/// copies, for the default portions and for 2 per worker (where a straggler
/// holds a larger share of the pass).
nlohmann::json backups(const settings& s, const optim::train_test& data) {
  std::cerr << "lbfgs_compare: backups, one worker 4x slower" << std::endl;
  nlohmann::json runs = nlohmann::json::array();
  for (std::uint64_t portions : {std::uint64_t{0}, 2 * s.workers}) {
    auto o = lbfgs_options(s, "fashion-mnist");
    o.max_steps = s.slow_iterations;
    troupe::apps::algorithm_options<troupe::algos::sandblaster>(o)
        .gradient_tolerance
        = 0;
    troupe::apps::algorithm_options<troupe::algos::sandblaster>(o).portions
        = portions;
    auto prepared = apps::prepare_driver_job(o, data);
    auto run
        = dynamic_cast<const algos::sandblaster&>(*prepared.algorithm).lbfgs;
    nlohmann::json out{{"slow_worker_factor", 4},
                       {"workers", s.workers},
                       {"portions", run->portions},
                       {"iterations", s.slow_iterations}};
    for (bool with : {true, false}) {
      auto job = *run;
      job.slowdown.assign(s.workers, 1.0);
      job.slowdown[0] = 4;
      job.backups = with;
      auto r = algos::run_lbfgs(job);
      if (r.contains("error"))
        throw std::runtime_error(r["error"].get<std::string>());
      auto key = with ? "with_backups" : "without_backups";
      out[key] = {{"seconds", r["seconds"]},
                  {"passes", r["passes"]},
                  {"objective", r["f"]},
                  {"backups", r["backups"]},
                  {"duplicates_discarded", r["duplicates_discarded"]},
                  {"results_by_worker", r["results_by_worker"]}};
      std::cerr << "  " << job.portions << " portions, " << key << ": "
                << r["seconds"] << " s" << std::endl;
    }
    out["speedup"] = out["without_backups"]["seconds"].get<double>()
                     / out["with_backups"]["seconds"].get<double>();
    out["same_objective"] = out["with_backups"]["objective"]
                            == out["without_backups"]["objective"];
    runs.push_back(out);
  }
  return runs;
}

} // namespace

int main(int argc, char** argv) {
  try {
    auto s = parse(argc, argv);
    nlohmann::json out{
        {"benchmark", "lbfgs_compare"},
        {"hardware_threads", std::thread::hardware_concurrency()},
        {"workers", s.workers},
        {"shards", s.shards},
        {"seed", s.seed},
        {"downpour_budget_seconds", s.budget}};
    out["datasets"] = nlohmann::json::array();
    std::optional<optim::train_test> fashion; // loaded once, used twice
    for (auto& d : s.data) {
      auto data = load(s, d);
      out["datasets"].push_back(compare(s, d, data));
      if (d == "fashion-mnist")
        fashion = std::move(data);
    }
    if (!fashion)
      fashion = load(s, "fashion-mnist");
    out["backup_tasks"] = backups(s, *fashion);
    std::cout << out.dump(2) << std::endl;
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "lbfgs_compare: " << e.what() << std::endl;
    return 1;
  }
}
