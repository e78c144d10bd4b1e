#pragma once

#include <nlohmann/json.hpp>

#include "apps/progress.hpp"
#include "apps/train_command.hpp"
#include "optim/dataset.hpp"

namespace troupe::apps {

/// Trains with `o.algo` = sgd: one worker, no actors. `o` is validated and
/// defaults are filled in; `data` is the loaded (and standardized) data set.
/// Returns the final JSON without the keys run_train adds for every
/// algorithm (algo, model, data, batch, lr, seed, ...). Restores the
/// parameters of the last evaluation if training diverges ("error" key).
nlohmann::json run_single(const train_options& o, optim::train_test& data,
                          progress& bar);

} // namespace troupe::apps
