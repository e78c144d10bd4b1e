// DiLoCo's worker policy (diloco_policy.cpp): rounds of local steps with
// the inner optimizer, and the parameter-server exchange of the shared
// policy once a round, counted in rounds.

#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "actors/comm_policy.hpp"
#include "optim/optimizer.hpp"
#include "optim/schedule.hpp"

namespace troupe::algos {

struct diloco_policy_options {
  std::uint64_t inner_steps = 20; ///< H
  optim::optimizer_options inner{"nesterov", 0.9, 0};
  double lr = 0.01;
  /// Over the worker's own steps; empty: `lr` throughout.
  std::optional<optim::schedule_options> schedule;
  /// The exchange: synchronous rounds (the shards' sync plan) or not.
  actors::ps_policy_options exchange;
};

/// A round is H steps of the job's clock (clock() % H == 0 starts one):
/// its first step fetches the global parameters from the shards (under
/// synchronous rounds the fetch waits for the round before), each step
/// applies the inner optimizer, and the round's last step (or the worker's
/// last) pushes the pseudo-gradient start - x. The exchange is the shared
/// parameter-server policy's, its clock the round's index.
std::unique_ptr<actors::comm_policy>
make_diloco_policy(std::vector<actors::shard_ref> shards,
                   diloco_policy_options opts, std::size_t parameters);

} // namespace troupe::algos
