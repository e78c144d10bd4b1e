// All-reduce SGD (algorithms.md "All-reduce SGD"; the AllReduce-SGD baseline
// of Assran et al. 2019, and what PyTorch's DistributedDataParallel does):
// synchronous data-parallel SGD without a server. Each step the workers sum
// their gradients with a ring all-reduce among themselves and every worker
// applies the same mean with the same optimizer, so the replicas stay equal
// bit for bit. No shards: the (equal) workers' models are evaluated. With
// --reducer=powersgd or scalecom the ring sums compressed, summable vectors
// instead (two all-reduces a step).

#pragma once

#include "algos/algorithm.hpp"
#include "algos/allreduce/reducer.hpp"
#include "algos/local_steps.hpp"

namespace troupe::algos {

class allreduce : public algorithm {
public:
  // -- options (algos/algorithm.hpp) --
  std::string summary() const override;
  std::shared_ptr<algorithm> clone() const override;
  void bind(caf::config_option_set& set) override;
  void check_flags(const job_options& o,
                   const std::set<std::string>& given) const override;
  void build(job_build& b) override;
  bool uses_shards(const job_options& o) const override;
  /// A step is one global batch, split among the workers (as sync's).
  data_layout layout() const noexcept override;
  std::string servers(const actors::job_config& job) const override;

  // -- behavior (actors/algorithm.hpp) --
  std::string name() const override;
  actors::shard_plan plan(const actors::job_config& job) const override;
  void check(const actors::job_config& job) const override;
  void configure_worker(const actors::job_config& job,
                        actors::worker_config& config,
                        std::vector<actors::shard_ref> shards) const override;
  bool peer_to_peer() const noexcept override;
  /// The ring's predecessor and successor.
  std::vector<messages::worker_id>
  peer_ranks(const actors::job_config& job,
             messages::worker_id w) const override;
  bool lingers() const noexcept override;
  /// The workers pause after one step agreed on the ring (ring_pause.hpp).
  bool checkpointable() const noexcept override;
  /// A step's batch is every worker's: a lost worker ends the job.
  bool reassigns_steps() const noexcept override;
  void report(const actors::coordinator_state& st,
              nlohmann::json& out) const override;
  void report_worker(const messages::worker_stats& stats,
                     nlohmann::json& out) const override;

  // -- its flags: what the ring sums (--reducer, --powersgd-rank,
  // --scalecom-density, --scalecom-beta); the layers and seed from build() --
  reducer_options reduce;

  // -- its settings, resolved by build() --
  /// The workers' optimizer, rate and schedule (over the steps, each one
  /// global batch).
  local_steps local;
};

} // namespace troupe::algos
