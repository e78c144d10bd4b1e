// A node of a distributed job: joins a coordinator and hosts the roles it
// is given until the job ends.

#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "actors/node_agent.hpp"
#include "net/system.hpp"

namespace troupe::net {

struct node_options {
  endpoint join;
  std::uint32_t workers = 1; ///< worker slots offered
  std::uint32_t shards = 0;  ///< shard slots offered
  /// Seconds to keep trying to reach the coordinator (it may start later).
  double join_timeout = 60;
  /// Seconds to wait, once the coordinator is lost, for a coordinator at
  /// the same address (restarted with --resume) to admit this node again;
  /// 0: exit at once. The job's roles end with the loss (the restarted
  /// coordinator places them again from its latest checkpoint).
  double coordinator_grace = 0;
  link_options link;
  std::size_t threads = 0; ///< scheduler threads (0: one per core)
  /// Direct links to the other nodes (net/peer_link.hpp): a peer port on
  /// `peer_listen` (host "": the address this host reaches the coordinator
  /// from; port 0: any). Off: this node's traffic to other nodes goes
  /// through the coordinator's process.
  bool direct = true;
  endpoint peer_listen;
};

/// What became of a node.
struct node_outcome {
  int status = 0;      ///< 0: the job ended; 1: refused, unreachable or lost
  std::string message; ///< for the user
};

/// Joins the coordinator at opts.join, serves the job (building it with
/// `agent.build`) and returns when it is over or the coordinator is lost
/// (with opts.coordinator_grace: not come back within it).
/// The agent spawns `agent.roles` by name; unset: the shared roles and
/// every registered algorithm's own (algos::node_roles). Throws
/// std::invalid_argument for unusable options.
node_outcome run_node(const node_options& opts,
                      actors::node_agent_config agent);

} // namespace troupe::net
