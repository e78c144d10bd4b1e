#pragma once

// troupe simulate --compare=A,B,...: one job, one simulated cluster, several
// algorithms; their test accuracy over simulated time side by side.

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace troupe::apps {

/// Runs `troupe simulate` with `args` (one algorithm); its result, as the
/// simulator returned it, in `*captured` if not null. Returns the exit
/// status (simulate_command.cpp).
int simulate_with(const std::vector<std::string>& args,
                  std::shared_ptr<nlohmann::json> captured);

/// The comparison: `args` hold --compare=LIST (on the command line) and the
/// job's and cluster's flags, which every listed algorithm must take. Each
/// runs in turn; with --report=DIR each run's report goes to DIR/ALGO and
/// the comparison to DIR/compare.svg and DIR/index.html; with --json the
/// last line of stdout is {"compare": [result, ...]}. Returns the exit
/// status (the first failed run's).
int simulate_compare(const std::vector<std::string>& args);

/// The charts of a comparison (test accuracy and test loss over simulated
/// seconds, a line per result) as one SVG document.
std::string compare_svg(const std::vector<nlohmann::json>& results);

} // namespace troupe::apps
