#pragma once

// troupe simulate's compute model (docs/simulation.md): what a step and a
// shard's update cost on a simulated node, from the model's estimated work,
// given seconds or real steps timed here, and the model it stands for
// (--virtual-params).

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "actors/coordinator.hpp"
#include "apps/cluster_train.hpp"
#include "sim/run.hpp"

namespace troupe::apps {

/// The compute flags of troupe simulate, as given.
struct compute_flags {
  double sample_seconds = 0; ///< 0: from the model's work
  double value_seconds = 0;  ///< 0: from --node-gflops
  double node_gflops = 25;
  bool calibrate = false;
  std::uint64_t virtual_params = 0; ///< 0: the model's own
};

/// --virtual-params=TEXT: a count of parameters from 1 to 10^12 (digits or
/// an integral number such as 1e9; "" or absent: 0, the model's own).
/// Throws usage_error naming the flag.
std::uint64_t virtual_params_of(const std::string& text);

/// Sets `so`'s compute model (sample and value seconds, the update scale)
/// and its virtual size for `job` (built as `cj`). Returns the additions to
/// the result's simulation.compute (its "source", ...). Throws usage_error
/// if --virtual-params is less than the model's parameters.
nlohmann::json choose_compute(sim::sim_options& so, const compute_flags& f,
                              const actors::job_config& job,
                              const cluster_job& cj);

/// Every simulated replica is real: refuses a cluster that cannot fit here.
void check_memory(const actors::job_config& job);

} // namespace troupe::apps
