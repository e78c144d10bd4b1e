// The options every job has, whatever its algorithm: the model, the data,
// the workers and shards, the rates and limits (troupe train's common
// flags). An algorithm reads them when it checks its own flags, fills in its
// defaults and builds its part of the job.

#pragma once

#include <cstdint>
#include <string>

namespace troupe::algos {

/// Zero means "the model's default" for lr and epochs, and "no limit" for
/// the limits.
struct job_options {
  std::string model = "mlp";
  std::string data = "fashion-mnist";
  /// The label's column of CSV data (empty: "label", else "target", else
  /// the last column; optim::read_csv).
  std::string label_column;
  bool standardize = true; ///< scale inputs to mean 0, stddev 1 (train stats)
  std::uint64_t workers = 1;
  std::uint64_t shards = 1;
  /// Hot backups per shard (0 or 1): each applies the primary's pushes in
  /// the primary's order, and takes over when the primary's node is lost.
  std::uint64_t shard_replicas = 0;
  std::uint64_t batch = 64;
  double lr = 0;
  std::uint64_t seed = 1;
  double epochs = 0;
  double max_seconds = 0;
  double target_accuracy = 0;
  std::uint64_t max_steps = 0;
  std::uint64_t train_examples = 0; ///< use only the first N training examples
  std::string optimizer;            ///< empty: the algorithm's default
  double momentum = 0.9;
  double weight_decay = -1; ///< negative: the algorithm's default
  std::string schedule = "step";
  double lr_decay = 0;       ///< step schedule factor (0: model default)
  double lr_step_epochs = 0; ///< step schedule period in epochs (0: default)
  double warmup_epochs = 0;
  double eval_every = 0;       ///< epochs between test evaluations (0: auto)
  std::uint64_t threads = 0;   ///< scheduler threads (0: one per core)
  double request_timeout = 60; ///< seconds
  std::string init;            ///< a saved model to start from (empty: seed)
  /// Byzantine workers (optim/attack.hpp): the last `byzantine` workers
  /// send what `attack` says instead of their gradients.
  std::uint64_t byzantine = 0;
  std::string attack = "sign_flip";
  double attack_scale = 1;          ///< sign flip's c, IPM's eps
  double attack_sigma = 100;        ///< Gaussian noise's stddev
  std::uint64_t attack_batches = 4; ///< ALIE's and IPM's scout batches
  /// Workers send their momentum beta m + (1 - beta) g instead of g (0:
  /// off; optim/worker_momentum.hpp).
  double worker_momentum = 0;
};

} // namespace troupe::algos
