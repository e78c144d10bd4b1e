// The coordinator's side of a distributed job: listen, admit nodes, place
// the roles on them, run the job, let the nodes go.

#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "actors/job.hpp"
#include "net/system.hpp"

namespace troupe::net {

struct cluster_options {
  endpoint listen;          ///< port 0: any free port
  std::uint32_t expect = 1; ///< nodes to wait for
  double join_timeout = 60; ///< seconds to wait for them
  link_options link;
  /// Without TLS: check every incoming frame at a guard in front of CAF's
  /// port (guard.hpp). Off only for measurements.
  bool guard = true;
  /// Called once the port is open (with the actual port), before nodes are
  /// awaited: a launcher starts its nodes here. May be empty.
  std::function<void(std::uint16_t port)> on_listening;
};

/// Runs `job` with its roles on `opts.expect` nodes that join at
/// opts.listen. Each node gets `spec` and must build a job with the same
/// `fingerprint`. Returns the coordinator's final JSON (with "nodes",
/// "failures" and "lost_nodes"). Throws std::invalid_argument for unusable
/// options (TLS, endpoint) and std::runtime_error when the port cannot be
/// opened or the nodes do not join in time.
nlohmann::json run_distributed(actors::job_config job, const std::string& spec,
                               const std::string& fingerprint,
                               const cluster_options& opts,
                               actors::runtime_options rt = {});

} // namespace troupe::net
