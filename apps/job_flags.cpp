#include "apps/job_flags.hpp"

#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "actors/coordinator.hpp"
#include "algos/registry.hpp"
#include "apps/train_command.hpp"

namespace troupe::apps {

namespace {

constexpr model_defaults model_table[] = {
    {"mlp", 0.05, 10, 0.5, 2},
    {"lenet", 0.03, 12, 0.5, 3},
    {"logreg", 0.02, 5, 0.5, 2},
};

/// "default 0.5" if every model agrees, else "default: mlp 2, lenet 3, ...".
std::string per_model(double model_defaults::*field) {
  auto fmt = [](double x) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%g", x);
    return std::string{buf};
  };
  bool same = true;
  for (const auto& d : model_table)
    same = same && d.*field == model_table[0].*field;
  if (same)
    return "default " + fmt(model_table[0].*field);
  std::string out = "default:";
  for (const auto& d : model_table)
    out += std::string{&d == model_table ? " " : ", "} + d.model + " "
           + fmt(d.*field);
  return out;
}

/// What each registered algorithm makes of an unset job option (its
/// resolve()): "default X; Y for a and b", from the algorithms themselves.
std::string resolved_defaults(
    const std::function<std::string(const algos::job_options&)>& value) {
  std::map<std::string, std::vector<std::string>> users;
  std::vector<std::string> order;
  for (const auto& e : algos::registered_algorithms()) {
    algos::job_options o;
    try {
      e.make()->resolve(o, model_table[0].lr);
    } catch (const std::exception&) {
      continue;
    }
    auto v = value(o);
    if (v.empty())
      continue; // the algorithm ignores the option
    if (users[v].empty())
      order.push_back(v);
    users[v].push_back(e.name);
  }
  if (order.empty())
    return "";
  // The default algorithm's (the first registered) value is the default;
  // the others name theirs.
  const auto& common = order.front();
  std::string out = "default " + common;
  for (const auto& v : order)
    if (v != common)
      out += "; " + v + " for " + algos::joined_names(users[v]);
  return out;
}

/// "a, b and c": the registered algorithms for which `holds` is true.
std::string
names_where(const std::function<bool(const algos::algorithm&)>& holds) {
  return algos::joined_names(algos::algorithms_where(holds));
}

} // namespace

const model_defaults& defaults_for(const std::string& label) {
  for (const auto& d : model_table)
    if (label == d.model)
      return d;
  return model_table[0]; // an unknown model is refused by make_model
}

void add_job_flags(option_parser& p, algos::job_options& o) {
  p.add(o.model, "model",
        "logreg | mlp | lenet (default mlp) | FILE.json: a model "
        "description | torchscript:FILE.pt: a module saved with "
        "torch.jit.save (docs/models.md)")
      .add(o.data, "data",
           "fashion-mnist (default) | DIR of IDX files | DIR with train/ "
           "and test/ of CSV files (each worker reads its own) | "
           "FILE.csv[.gz] (header row) | libsvm FILE | synthetic-logreg")
      .add(o.label_column, "label-column",
           "NAME: with CSV data, the label's column (default: \"label\", "
           "else \"target\", else the last)")
      .add(o.standardize, "standardize",
           "standardize inputs with the training set's mean and stddev "
           "(each column's own for CSV data)")
      .add(o.workers, "workers",
           "number of workers (1 for "
               + names_where([](const algos::algorithm& a) {
                   return a.run_by() == algos::runner::single_loop;
                 })
               + ")")
      .add(o.shards, "shards",
           "parameter-server shards (default 1; none for "
               + names_where([](const algos::algorithm& a) {
                   return !a.uses_shards(algos::job_options{});
                 })
               + ")")
      .add(o.shard_replicas, "shard-replicas",
           "hot backups per shard, 0 or 1: a shard's node lost costs no "
           "update ("
               + names_where([](const algos::algorithm& a) {
                   return a.replicates_shards(actors::job_config{});
                 })
               + ")")
      .add(o.batch, "batch", "minibatch size per worker (default 64)")
      .add(o.lr, "lr", "learning rate (" + per_model(&model_defaults::lr) + ")")
      .add(o.seed, "seed", "random seed (default 1; same seed, same run)")
      .add(o.epochs, "epochs",
           "epochs (" + per_model(&model_defaults::epochs) + ")")
      .add(o.max_seconds, "max-seconds",
           "stop after this many seconds (default: no limit)")
      .add(o.target_accuracy, "target-accuracy",
           "stop once test accuracy reaches this")
      .add(o.byzantine, "byzantine",
           "the last F workers attack instead of training (default 0)")
      .add(o.attack, "attack",
           "what --byzantine workers send: sign_flip | gaussian | label_flip "
           "| alie | ipm | nan | inf (default sign_flip)")
      .add(o.attack_scale, "attack-scale",
           "sign_flip: the factor c of -c g; ipm: eps of -eps mu (default 1)")
      .add(o.attack_sigma, "attack-sigma",
           "gaussian: the noise's standard deviation (default 100)")
      .add(o.attack_batches, "attack-batches",
           "alie, ipm: batches the attackers estimate the honest mean and "
           "spread from (default 4)")
      .add(o.worker_momentum, "worker-momentum",
           "workers push their momentum beta m + (1 - beta) g, which robust "
           "rules separate better from attacks (0: off, the default); the "
           "optimizer then defaults to sgd and the rate to the model's / "
           "(1 - beta)")
      .add(o.max_steps, "max-steps",
           "stop after this many optimizer steps (lbfgs: iterations, "
           "default 100)")
      .add(o.train_examples, "train-examples",
           "train on the first N examples only (0: all)")
      .add(o.optimizer, "optimizer",
           "sgd | momentum | nesterov | adagrad | adam | novograd ("
               + resolved_defaults(
                   [](const algos::job_options& j) { return j.optimizer; })
               + ")")
      .add(o.momentum, "momentum", "momentum factor (default 0.9)")
      .add(o.weight_decay, "weight-decay",
           "L2 penalty (" + resolved_defaults([](const algos::job_options& j) {
             if (j.weight_decay < 0)
               return std::string{};
             char buf[32];
             std::snprintf(buf, sizeof(buf), "%g", j.weight_decay);
             return std::string{buf};
           }) + ")")
      .add(o.schedule, "schedule", "constant | step (default) | cosine")
      .add(o.lr_decay, "lr-decay",
           "step schedule: factor per period ("
               + per_model(&model_defaults::lr_decay) + ")")
      .add(o.lr_step_epochs, "lr-step-epochs",
           "step schedule: period in epochs ("
               + per_model(&model_defaults::lr_step_epochs) + ")")
      .add(o.warmup_epochs, "warmup-epochs", "linear warm-up (epochs)")
      .add(o.eval_every, "eval-every",
           "epochs between test evaluations (default 0.25 with a target, else "
           "1)")
      .add(o.threads, "threads", "actor scheduler threads (0: one per core)")
      .add(o.request_timeout, "request-timeout",
           "seconds before an unanswered request fails the job (default 60)")
      .add(o.init, "init",
           "FILE: start from a model saved by --save (it must match --model "
           "and the data) instead of the seed's initialization");
}

} // namespace troupe::apps
