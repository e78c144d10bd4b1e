// Synchronous SGD (algorithms.md §1): every worker pushes each step's
// gradient; each shard combines a round's pushes (a sample-weighted mean)
// and applies it once, then answers the round's fetches.

#pragma once

#include "actors/algorithm.hpp"

namespace troupe::algos {

class sync : public actors::algorithm {
public:
  std::string name() const override;
  actors::shard_plan plan(const actors::job_config& job) const override;
  void configure_worker(const actors::job_config& job,
                        actors::worker_config& config,
                        std::vector<actors::shard_ref> shards) const override;
  bool reassigns_steps() const noexcept override;
  bool tracks_clocks(const actors::job_config& job) const noexcept override;
  const optim::compress_options*
  compression(const actors::job_config& job) const noexcept override;
};

} // namespace troupe::algos
