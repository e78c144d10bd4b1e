#pragma once

#include <nlohmann/json.hpp>

#include "apps/cluster_train.hpp"
#include "apps/progress.hpp"
#include "apps/train_command.hpp"
#include "optim/dataset.hpp"

// `troupe train --algo=lbfgs`: Sandblaster L-BFGS (algorithms.md §2) on a
// data set's full-batch objective, the mean cross-entropy of the model over
// the training examples plus (--weight-decay / 2) ||x||^2, in double. In one
// process or on the nodes of a distributed job (--listen), the same flags.

namespace troupe::apps {

/// Sandblaster's defaults: the L2 penalty (a unique optimum on logreg) and
/// the iteration limit without --max-steps.
inline constexpr double lbfgs_default_l2 = 1e-4;
inline constexpr std::uint64_t lbfgs_default_iterations = 100;

/// Builds the job of validated options on loaded, scaled data (here or on a
/// node).
cluster_job prepare_lbfgs_job(const train_options& o, optim::train_test data);

/// Runs it (here, or on the joined nodes with --listen) and returns the
/// common result JSON: test accuracy and loss at the final point, seconds,
/// samples per second, the objective, iterations, passes, a trace per
/// iteration and the portion accounting.
nlohmann::json run_lbfgs_train(const train_options& o, optim::train_test data,
                               progress& bar);

} // namespace troupe::apps
