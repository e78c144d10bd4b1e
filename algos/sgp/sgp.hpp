// Stochastic gradient push (algorithms.md §5): each worker keeps a push-sum
// numerator and weight, steps locally and sends shares to its out-peers of
// the step on an exponential graph; optionally overlapped and compressed.
// No shards: the mean of the workers' models is evaluated.

#pragma once

#include "actors/comm_policy.hpp"
#include "algos/aggregation_flags.hpp"
#include "algos/algorithm.hpp"
#include "algos/compression_flags.hpp"
#include "algos/local_steps.hpp"

namespace troupe::algos {

class sgp : public algorithm {
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
  /// Its exponential graph's neighbours (2 log2 n at most).
  std::vector<messages::worker_id>
  peer_ranks(const actors::job_config& job,
             messages::worker_id w) const override;
  bool lingers() const noexcept override;
  /// The push-sum state is the workers' (a pause's markers leave no share
  /// in flight, peer_policy::quiesce).
  bool checkpointable() const noexcept override;
  const optim::compress_options*
  compression(const actors::job_config& job) const noexcept override;
  void report(const actors::coordinator_state& st,
              nlohmann::json& out) const override;
  void report_worker(const messages::worker_stats& stats,
                     nlohmann::json& out) const override;

  // -- its flags --
  std::uint64_t peers = 1;   ///< out-peers per step (1 or 2)
  std::uint64_t overlap = 0; ///< bound on in-peer staleness
  double gossip_gamma = 0.5; ///< consensus step with compression
  compression_flags compression_settings;
  /// Robust mixing (--aggregation: mean or cclip).
  aggregation_flags mixing;

  // -- its settings, resolved by build() --
  /// Peers, overlap, compression, gamma and seed (the workers' count,
  /// optimizer, rate, schedule and start come from the job and `local`).
  actors::peer_policy_options settings;
  /// The workers' optimizer, rate and schedule.
  local_steps local;
};

/// The peer options of a job's workers (SGP, DS-Sync): the algorithm's peer
/// settings with the job's workers and start and the local steps.
actors::peer_policy_options peer_options(const actors::job_config& job,
                                         actors::peer_policy_options settings,
                                         const local_steps& local);

} // namespace troupe::algos
