#pragma once

#include <string>
#include <vector>

namespace troupe::apps {

/// Entry point of `troupe simulate`: a `troupe train` job (same flags) run
/// by its real actors on a simulated cluster in virtual time
/// (sim/scheduler.hpp), with the cluster's flags. Returns the exit status.
int simulate_main(const std::vector<std::string>& args);

} // namespace troupe::apps
