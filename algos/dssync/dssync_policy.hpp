// DS-Sync's worker policy (dssync_policy.cpp) and its group schedule.

#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "actors/comm_policy.hpp"

namespace troupe::algos {

/// DS-Sync (algorithms.md §7): after each local step the worker sends its
/// parameters to the other members of its group of the round, waits for
/// theirs and replaces its parameters by the group mean (summed in rank
/// order, so every member gets the same bits). The wait and the mean come
/// before the next step's computation (a worker may pause there for a
/// checkpoint), after the last of its `steps` steps at once.
std::unique_ptr<actors::comm_policy>
make_dssync_policy(actors::peer_policy_options opts, std::size_t parameters,
                   std::uint64_t steps);

/// DS-Sync uses the digit schedule (workers a power of the group size).
bool digit_schedule(const actors::peer_policy_options& opts) noexcept;

/// DS-Sync's partition of round k (each rank's group id).
std::vector<std::uint32_t>
dssync_groups(const actors::peer_policy_options& opts, std::uint64_t k);

/// The members of `rank`'s group of round k, increasing, `rank` included:
/// O(m) on either schedule (O(n) for one group of all).
std::vector<std::uint32_t>
dssync_members(const actors::peer_policy_options& opts, std::uint64_t k,
               std::uint32_t rank);

} // namespace troupe::algos
