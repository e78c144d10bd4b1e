// GADMM (Elgabli et al. 2020, "GADMM: Fast and Communication Efficient
// Framework for Distributed Machine Learning"; docs/algorithms.md): the
// workers form a chain and solve the consensus problem min sum_n f_n(x_n)
// subject to x_n = x_{n+1} by alternating direction: the heads (even
// positions) update from their neighbours' models, then the tails from the
// heads' new ones, and every edge's dual takes a step; each worker talks to
// its two neighbours only. Dynamic GADMM (--rechain=P) re-forms the chain
// every P iterations and passes the new edges' duals down it. No shards:
// the mean of the workers' models is evaluated.

#pragma once

#include "actors/comm_policy.hpp"
#include "algos/algorithm.hpp"
#include "algos/gadmm/gadmm_policy.hpp"
#include "algos/local_steps.hpp"

namespace troupe::algos {

class gadmm : public algorithm {
public:
  // -- options (algos/algorithm.hpp) --
  std::string summary() const override;
  std::shared_ptr<algorithm> clone() const override;
  void bind(caf::config_option_set& set) override;
  void check_flags(const job_options& o,
                   const std::set<std::string>& given) const override;
  void resolve(job_options& o, double model_lr) const override;
  void build(job_build& b) override;
  bool uses_shards(const job_options& o) const override;

  // -- behavior (actors/algorithm.hpp) --
  std::string name() const override;
  actors::shard_plan plan(const actors::job_config& job) const override;
  void check(const actors::job_config& job) const override;
  void configure_worker(const actors::job_config& job,
                        actors::worker_config& config,
                        std::vector<actors::shard_ref> shards) const override;
  bool peer_to_peer() const noexcept override;
  /// The two chain neighbours; with --rechain, every other worker (the
  /// chains to come are drawn from the seed).
  std::vector<messages::worker_id>
  peer_ranks(const actors::job_config& job,
             messages::worker_id w) const override;
  /// With --rechain: any worker may become a neighbour
  /// (the workers get one shared table of handles).
  bool any_peer(const actors::job_config& job) const override;
  bool lingers() const noexcept override;
  /// The workers' state is all of it (markers settle the models and duals
  /// in flight, peer_policy::quiesce).
  bool checkpointable() const noexcept override;
  void report(const actors::coordinator_state& st,
              nlohmann::json& out) const override;
  void report_worker(const messages::worker_stats& stats,
                     nlohmann::json& out) const override;

  // -- its flags (the settings' rho, round_steps, rechain) --
  gadmm_settings settings;

  // -- resolved by build() --
  /// The workers' optimizer, rate and schedule.
  local_steps local;
  std::uint64_t seed = 1;
};

} // namespace troupe::algos
