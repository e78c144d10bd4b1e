#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace troupe::apps {

/// Everything `troupe train` can be told. Zero means "the model's default"
/// for lr and epochs, and "no limit" for the limits.
struct train_options {
  std::string algo = "sgd";
  std::string model = "mlp";
  std::string data = "fashion-mnist";
  bool standardize = true; ///< scale inputs to mean 0, stddev 1 (train stats)
  std::uint64_t workers = 1;
  std::uint64_t shards = 1;
  std::uint64_t batch = 64;
  double lr = 0;
  std::uint64_t seed = 1;
  double epochs = 0;
  double max_seconds = 0;
  double target_accuracy = 0;
  std::uint64_t max_steps = 0;
  std::uint64_t train_examples = 0; ///< use only the first N training examples
  std::string optimizer = "momentum";
  double momentum = 0.9;
  double weight_decay = 0;
  std::string schedule = "step";
  double lr_decay = 0;       ///< step schedule factor (0: model default)
  double lr_step_epochs = 0; ///< step schedule period in epochs (0: default)
  double warmup_epochs = 0;
  double eval_every = 0; ///< epochs between test evaluations (0: auto)
  std::string progress = "auto";
  bool json = false;
};

/// Registers the options of `troupe train` on `parser`-like objects.
template <class Parser>
void add_train_options(Parser& p, train_options& o) {
  p.add(o.algo, "algo", "training algorithm (default sgd): sgd = one worker")
      .add(o.model, "model", "logreg | mlp | lenet (default mlp)")
      .add(o.data, "data",
           "fashion-mnist (default) | DIR of IDX files | libsvm FILE | "
           "synthetic-logreg")
      .add(o.standardize, "standardize",
           "standardize inputs with the training set's mean and stddev")
      .add(o.workers, "workers", "number of workers (sgd: 1)")
      .add(o.shards, "shards", "parameter-server shards (sgd: 1)")
      .add(o.batch, "batch", "minibatch size per worker (default 64)")
      .add(o.lr, "lr",
           "learning rate (default: mlp 0.05, lenet 0.03, logreg 0.02)")
      .add(o.seed, "seed", "random seed (default 1; same seed, same run)")
      .add(o.epochs, "epochs", "epochs (default: mlp 10, lenet 12, logreg 5)")
      .add(o.max_seconds, "max-seconds",
           "stop after this many seconds (default: no limit)")
      .add(o.target_accuracy, "target-accuracy",
           "stop once test accuracy reaches this")
      .add(o.max_steps, "max-steps", "stop after this many optimizer steps")
      .add(o.train_examples, "train-examples",
           "train on the first N examples only (0: all)")
      .add(o.optimizer, "optimizer",
           "sgd | momentum (default) | nesterov | adagrad | adam")
      .add(o.momentum, "momentum", "momentum factor (default 0.9)")
      .add(o.weight_decay, "weight-decay", "L2 penalty (default 0)")
      .add(o.schedule, "schedule", "constant | step (default) | cosine")
      .add(o.lr_decay, "lr-decay",
           "step schedule: factor per period (default 0.5)")
      .add(o.lr_step_epochs, "lr-step-epochs",
           "step schedule: period in epochs (default: mlp 2, lenet 3)")
      .add(o.warmup_epochs, "warmup-epochs", "linear warm-up (epochs)")
      .add(o.eval_every, "eval-every",
           "epochs between test evaluations (default 0.25 with a target, else "
           "1)")
      .add(o.progress, "progress",
           "auto (bar on a terminal, else lines) | bar | lines | none")
      .add(o.json, "json", "print one JSON object on the last stdout line");
}

/// Runs `troupe train` with parsed options and returns the final result
/// object. Throws usage_error for inconsistent options, optim::data_error for
/// unusable data, std::domain_error when training diverges.
nlohmann::json run_train(train_options opts);

/// Entry point of `troupe train`: parses `args`, runs, prints. Returns the
/// process exit status (0 ok, 1 runtime error, 2 usage error).
int train_main(const std::vector<std::string>& args);

} // namespace troupe::apps
