#pragma once

// Runs a job on a simulated cluster (sim/scheduler.hpp): the coordinator on
// node 0, worker w on node 1 + w, the shards on nodes of their own after
// the workers' (or on the workers' nodes), each node a real node agent that
// spawns the roles placed on it, as `troupe train` across processes does.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/coordinator.hpp"
#include "sim/scheduler.hpp"

namespace troupe::sim {

/// A node that crashes: the node of `role` ("worker", "shard" or "node")
/// number `index`, at `seconds` of simulated time.
struct crash_spec {
  std::string role;
  std::uint32_t index = 0;
  double seconds = 0;
};

struct sim_options {
  network_options network;
  compute_options compute;
  /// Payloads between nodes cost as if the model had this many parameters
  /// instead of its own d: tensor values x virtual_params / d (0: its own;
  /// at least d). Its compute is the caller's to scale (compute above).
  std::uint64_t virtual_params = 0;
  /// Where the shards run: on nodes of their own, shard i on worker
  /// i mod W's node, or with the coordinator on node 0 (as troupe launch
  /// --local places them).
  enum class shard_place { own, workers, coordinator };
  shard_place shards_on = shard_place::own;
  /// Caps: actor resumes (0: none) and real seconds.
  std::uint64_t max_events = 0;
  double wall_seconds = 3600;
  std::vector<crash_spec> crashes;
};

/// The node `c` names in `job`'s cluster; throws std::invalid_argument
/// naming the role if there is none.
std::uint32_t node_of(const crash_spec& c, const actors::job_config& job,
                      const sim_options& o);

/// The nodes a job takes: 1 + workers (+ shards on nodes of their own).
std::uint32_t nodes_for(const actors::job_config& job, const sim_options& o);

/// Runs `job` (built as for one process; its placement is replaced) and
/// returns the coordinator's JSON with a "simulation" section: simulated
/// seconds, events, messages, the network's bytes and the trace hash.
/// Throws std::runtime_error if the job does not finish.
nlohmann::json run_simulation(actors::job_config job, const sim_options& o);

} // namespace troupe::sim
