// DiLoCo's worker policy (diloco_policy.cpp): rounds of local steps with
// the inner optimizer, and the parameter-server exchange of the shared
// policy once a round, counted in rounds.

#pragma once

#include <memory>
#include <vector>

#include "algos/local_rounds.hpp"

namespace troupe::algos {

/// A round is H steps of the job's clock (clock() % H == 0 starts one):
/// its first step fetches the global parameters from the shards (under
/// synchronous rounds the fetch waits for the round before), each step
/// applies the inner optimizer, and the round's last step (or the worker's
/// last) pushes the pseudo-gradient start - x. The exchange is the shared
/// parameter-server policy's, its clock the round's index.
std::unique_ptr<actors::comm_policy>
make_diloco_policy(std::vector<actors::shard_ref> shards,
                   const round_options& opts, std::size_t parameters);

} // namespace troupe::algos
