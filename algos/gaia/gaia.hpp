// Gaia (Hsieh et al., NSDI 2017, "Gaia: Geo-Distributed Machine Learning
// Approaching LAN Speeds"; docs/algorithms.md): the workers form groups
// ("data centres"), each with a server of its own that holds a whole
// replica. Inside a group the workers push to and fetch from their server
// as Downpour's do; between groups the servers send each other only the
// significant part of their changes (Approximate Synchronous Parallel:
// |change| > --significance * |value|), and with --mirror-bound a group
// more than that many clocks ahead of the slowest waits (the mirror
// clock). The evaluated model is group 0's replica, or the first live
// group's once group 0's server is lost.

#pragma once

#include <cstdint>
#include <vector>

#include "algos/algorithm.hpp"

namespace troupe::algos {

class gaia : public algorithm {
public:
  // -- options (algos/algorithm.hpp) --
  std::string summary() const override;
  std::shared_ptr<algorithm> clone() const override;
  void bind(caf::config_option_set& set) override;
  void check_flags(const job_options& o,
                   const std::set<std::string>& given) const override;
  void resolve(job_options& o, double model_lr) const override;
  bool uses_shards(const job_options& o) const override;
  void build(job_build& b) override;
  std::string servers(const actors::job_config& job) const override;
  void add_roles(actors::role_registry& roles) const override;

  // -- behavior (actors/algorithm.hpp) --
  std::string name() const override;
  actors::shard_plan plan(const actors::job_config& job) const override;
  void configure_worker(const actors::job_config& job,
                        actors::worker_config& config,
                        std::vector<actors::shard_ref> shards) const override;
  /// The servers' states are the run's (gaia_run::save), the rest the
  /// workers' policies'.
  bool checkpointable() const noexcept override;
  std::unique_ptr<actors::algorithm_run>
  start(const actors::job_config& job) const override;
  void report(const actors::coordinator_state& st,
              nlohmann::json& out) const override;

  // -- its flags --
  std::uint64_t groups = 0;      ///< 0: one per node, or 2
  double significance = 0.05;    ///< relative threshold
  std::int64_t mirror_bound = 2; ///< clocks (-1: none)
  std::string server_optimizer;  ///< empty: sgd
  double bound_wait = 2;         ///< seconds a held fetch waits at most

  // -- resolved by build() --
  /// Each worker's group (empty: one group per node, from the placement).
  std::vector<std::uint32_t> group_of;
};

/// Gaia's groups of a job: `group_of` if it covers the workers, else one
/// per node of the placement (lsgd_groups).
std::vector<std::uint32_t> gaia_groups(const gaia& algo,
                                       const actors::job_config& job);

} // namespace troupe::algos
