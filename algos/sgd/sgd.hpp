// Plain minibatch SGD: one worker's training loop in this process, no
// actors (apps/single_train.cpp runs it). The baseline every distributed
// algorithm is measured against.

#pragma once

#include "algos/algorithm.hpp"

namespace troupe::algos {

class sgd : public algorithm {
public:
  // -- options (algos/algorithm.hpp) --
  std::string summary() const override;
  std::shared_ptr<algorithm> clone() const override;
  void check_flags(const job_options& o,
                   const std::set<std::string>& given) const override;
  runner run_by() const noexcept override;

  // -- behavior (actors/algorithm.hpp): never run by the coordinator --
  std::string name() const override;
  actors::shard_plan plan(const actors::job_config& job) const override;
  void configure_worker(const actors::job_config& job,
                        actors::worker_config& config,
                        std::vector<actors::shard_ref> shards) const override;
};

} // namespace troupe::algos
