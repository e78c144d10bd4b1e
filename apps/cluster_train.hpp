#pragma once

#include <nlohmann/json.hpp>

#include "apps/progress.hpp"
#include "apps/train_command.hpp"
#include "optim/dataset.hpp"

namespace troupe::apps {

/// Whether `algo` runs as an actor cluster (downpour, sync).
bool is_cluster_algo(const std::string& algo);

/// Checks the cluster options of `o` (validated otherwise); throws
/// usage_error naming the flag.
void validate_cluster(const train_options& o);

/// Trains with `o.algo` = downpour or sync: shards, workers, evaluator and
/// coordinator as actors in this process. `o` is validated and defaults are
/// filled in. Returns the final JSON (without the data and model keys the
/// caller adds).
nlohmann::json run_cluster(const train_options& o, optim::train_test data,
                           progress& bar);

} // namespace troupe::apps
