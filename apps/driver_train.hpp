#pragma once

#include <nlohmann/json.hpp>

#include "apps/cluster_train.hpp"
#include "apps/progress.hpp"
#include "apps/train_command.hpp"
#include "optim/dataset.hpp"

// `troupe train` with an algorithm that runs its jobs with a driver of its
// own (algos::runner::own_driver, e.g. --algo=lbfgs): the algorithm's
// build() makes its run over the training set, its driver runs it (in one
// process or on the nodes of a distributed job, --listen, the same flags)
// and its complete_result() finishes the final JSON given the test set.

namespace troupe::apps {

/// Builds the job of validated options on loaded, scaled data (here or on a
/// node): workers, shards, initial parameters and the built algorithm.
cluster_job prepare_driver_job(const train_options& o, optim::train_test data);

/// Runs it (here, or on the joined nodes with --listen) with a progress
/// line per step of the driver, and returns the final JSON as the
/// algorithm completes it.
nlohmann::json run_driver_train(const train_options& o, optim::train_test data,
                                progress& bar);

} // namespace troupe::apps
