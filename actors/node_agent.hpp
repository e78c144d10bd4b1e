#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/node_id.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/coordinator.hpp"
#include "actors/interfaces.hpp"
#include "actors/monitor.hpp"
#include "actors/role_registry.hpp"

namespace troupe::actors {

/// A job built from its spec on a node.
struct built_job {
  job_config job;
  /// Equal on every process that built the same job from the same data (the
  /// coordinator refuses a node whose fingerprint differs).
  std::string fingerprint;
};

/// Settings of a node agent.
struct node_agent_config {
  /// Builds the job from its spec (the coordinator's JSON); throws with the
  /// reason if it cannot (unknown model, data missing on this host, ...).
  std::function<built_job(const std::string& spec)> build;
  /// Receives the reason the job ended (may be empty).
  std::shared_ptr<std::string> stop_reason;
  /// This node's name (host:pid), as it introduced itself.
  std::string node_name = "node";
  /// The node of the coordinator this node joined (its registrar's): the
  /// only node whose actors the agent obeys. Unset: it obeys no one.
  caf::node_id coordinator;
  /// Obeys the actors of its own process instead (a simulated cluster,
  /// sim/run.hpp, whose nodes are all one process); `coordinator` unused.
  bool obey_own_process = false;
  /// The roles it spawns by name; unset: the shared ones only
  /// (shared_roles()). net::run_node sets the shared ones and every
  /// registered algorithm's (algos::register_roles) when unset; a node
  /// binary with roles of its own registers them next to those and sets
  /// them here before joining.
  std::shared_ptr<const role_registry> roles;
  /// How long a stopping agent waits for its hosted roles to end before it
  /// quits without them, naming them in the log.
  std::chrono::milliseconds stop_grace{10000};
};

struct node_agent_state {
  static inline const char* name = "node_agent";
  node_agent_config config;
  std::optional<job_config> job;
  /// The roles spawned here that have not ended yet.
  std::vector<caf::actor> hosted;
  /// Whether the agent is stopping: it quits with `stop_error` once `hosted`
  /// is empty.
  bool stopping = false;
  caf::error stop_error;
  node_monitor_actor monitor;
  probe_ref probe;
};

/// The actor a node offers to a coordinator: it builds the job once, spawns
/// by name the roles placed on this node (the built-in ones configured the
/// same way as in one process: roles.hpp; any registered one: role
/// registry.hpp), and stops them when the job ends (or one of them fails),
/// ending itself only after them (at most `config.stop_grace` later). Every
/// request from an actor not on `config.coordinator` is refused with
/// messages::errc::not_allowed (docs/deployment.md, "Who may call what").
node_actor::behavior_type
node_agent(node_actor::stateful_pointer<node_agent_state> self,
           node_agent_config config);

} // namespace troupe::actors
