// Downpour SGD (algorithms.md §1): asynchronous workers fetch the shards'
// parameters and push their gradients, which each shard applies on arrival;
// optionally under a staleness bound (SSP), with a warm start, compressed.

#pragma once

#include "actors/algorithm.hpp"

namespace troupe::algos {

class downpour : public actors::algorithm {
public:
  std::string name() const override;
  actors::shard_plan plan(const actors::job_config& job) const override;
  void configure_worker(const actors::job_config& job,
                        actors::worker_config& config,
                        std::vector<actors::shard_ref> shards) const override;
  bool warm_start() const noexcept override;
  bool tracks_clocks(const actors::job_config& job) const noexcept override;
  const optim::compress_options*
  compression(const actors::job_config& job) const noexcept override;
};

} // namespace troupe::algos
